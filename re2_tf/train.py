r"""Train a sentence-pair matching model with the RE2 release's recipe.

    python -m re2_tf.train --flagfile=configs/sample.flags
    python -m re2_tf.train --flagfile=configs/wikiqa.flags --data_dir=data/wikiqa --repeats=3

Every hyper-parameter of the authors' release is a flag with the release's default
(``configs/default.json5`` of the release); ``configs/<dataset>.flags`` hold the per-dataset
settings. Counts given in samples are converted to updates as ``ceil(samples / batch_size)``,
as the release does. Killing a run and re-running the same command resumes it from its last
evaluation point; re-running a finished run prints its results.
"""

import json
import logging
import math
import shutil
import sys
from pathlib import Path

from absl import app, flags

import re2_tf  # noqa: F401  (quiet TensorFlow import)
import keras
import numpy as np
import tensorflow as tf

from re2_tf import runs
from re2_tf.data import datasets
from re2_tf.data.embeddings import vocab_and_embeddings
from re2_tf.data.pipeline import encode_pairs, make_dataset
from re2_tf.evaluation import evaluate, format_metrics
from re2_tf.models import MODELS, RE2_DEFAULTS, count_parameters
from re2_tf.training import MatchingTrainer, WarmupExponentialDecay
from re2_tf.training.routine import ReleaseRoutine, samples_to_steps

FLAGS = flags.FLAGS

# data
flags.DEFINE_enum("dataset", "sample", sorted(datasets.DATASETS), "Dataset (label names, metric, tokeniser).")
flags.DEFINE_string("data_dir", None, "Prepared data directory with train/dev/test.txt (default: data/<dataset>).")
flags.DEFINE_string("run_dir", None, "Run directory (default: checkpoints/<dataset>-<model>).")
flags.DEFINE_string("embeddings", None, "GloVe-format vectors (.txt, .gz or .zip). Without it (or with --embeddings=) the embedding is random and trainable.")
flags.DEFINE_integer("min_df", 5, "Keep training words seen at least this often (or having a vector).")
flags.DEFINE_bool("lower_case", True, "Lower-case text and vectors.")
flags.DEFINE_integer("max_len", 999, "Drop training pairs with a text longer than this (999 = the release's 'unlimited').")
flags.DEFINE_string("eval_split", "dev", "Split used for model selection.")
flags.DEFINE_list("test_splits", ["test"], "Splits scored with the best checkpoint after training (missing files are skipped).")
# model
flags.DEFINE_enum("model", "re2", sorted(MODELS), "Architecture.")
flags.DEFINE_integer("embedding_dim", RE2_DEFAULTS["embedding_dim"], "Embedding width when no vectors are given.")
flags.DEFINE_integer("hidden_size", RE2_DEFAULTS["hidden_size"], "Hidden size of every layer.")
flags.DEFINE_float("dropout_rate", RE2_DEFAULTS["dropout_rate"], "Dropout drop probability (the release's dropout_keep_prob 0.8).")
flags.DEFINE_integer("blocks", RE2_DEFAULTS["blocks"], "Number of stacked blocks (1-5).")
flags.DEFINE_integer("enc_layers", RE2_DEFAULTS["enc_layers"], "Convolutional layers per encoder (1-5).")
flags.DEFINE_integer("kernel_size", RE2_DEFAULTS["kernel_size"], "Encoder convolution width.")
flags.DEFINE_enum("alignment", RE2_DEFAULTS["alignment"], ["linear", "identity"], "Alignment projection F (Eq. 2).")
flags.DEFINE_enum("fusion", RE2_DEFAULTS["fusion"], ["full", "simple"], "Fusion layer (Eq. 4 or simple).")
flags.DEFINE_enum("connection", RE2_DEFAULTS["connection"], ["aug", "residual"], "Connection between blocks.")
flags.DEFINE_enum("prediction", RE2_DEFAULTS["prediction"], ["full", "symmetric", "simple"], "Prediction layer (Eq. 5/6/7).")
flags.DEFINE_bool("enc_in", RE2_DEFAULTS["enc_in"], "Feed [x; encoder(x)] to alignment (False = ablation 'w/o enc-in').")
flags.DEFINE_bool("parallel_blocks", RE2_DEFAULTS["parallel_blocks"], "Ablation 'parallel blocks'.")
# optimisation
flags.DEFINE_integer("epochs", 30, "Passes over the training data.")
flags.DEFINE_integer("batch_size", 128, "Pairs per update.")
flags.DEFINE_float("lr", 1e-3, "Peak learning rate.")
flags.DEFINE_float("min_lr", 6e-5, "Learning-rate floor and warm-up start.")
flags.DEFINE_float("lr_decay_rate", 0.95, "Exponential decay factor (1 = fixed rate).")
flags.DEFINE_integer("lr_decay_samples", 128000, "Samples between decays.")
flags.DEFINE_integer("lr_warmup_samples", 0, "Samples of linear learning-rate warm-up.")
flags.DEFINE_float("beta1", 0.9, "Adam beta1.")
flags.DEFINE_float("beta2", 0.999, "Adam beta2.")
flags.DEFINE_float("grad_clipping", 5.0, "Clip gradients to this global norm.")
flags.DEFINE_float("max_loss", 999.0, "Stop when a batch loss exceeds this (unstable training).")
# evaluation routine
flags.DEFINE_integer("eval_per_samples", 6400, "Evaluate every this many samples.")
flags.DEFINE_integer("eval_per_samples_warmup", 40000, "Evaluation interval during the eval warm-up.")
flags.DEFINE_integer("eval_warmup_samples", 0, "Samples during which the warm-up interval applies.")
flags.DEFINE_bool("eval_epoch", True, "Also evaluate after every pass over the training data.")
flags.DEFINE_integer("min_samples", 0, "Train at least this many samples before early stopping.")
flags.DEFINE_integer("tolerance_samples", 400000, "Stop when the best dev score is older than this.")
flags.DEFINE_integer("log_per_samples", 5120, "TensorBoard training summaries every this many samples.")
# run control
flags.DEFINE_integer("seed", 1, "Random seed (initialisation, dropout, shuffling).")
flags.DEFINE_integer("repeats", 1, "Train this many seeds (seed, seed+1, ...) and report mean ± std.")
flags.DEFINE_bool("deterministic", True, "Enable TensorFlow op determinism so a seed repeats exactly.")
flags.DEFINE_bool("overwrite", False, "Delete an existing run directory instead of resuming it.")
flags.DEFINE_bool("progress", None, "Show a progress bar (default: when stdout is a terminal).")
flags.DEFINE_integer("threads", 0, "Intra-op threads (0 = TensorFlow's default).")

MODEL_FLAGS = ("hidden_size", "dropout_rate", "blocks", "enc_layers", "kernel_size", "alignment",
               "fusion", "connection", "prediction", "enc_in", "parallel_blocks")


def make_logger(run_dir):
    logger = logging.getLogger(f"re2_tf.train.{run_dir}")
    logger.setLevel(logging.INFO)
    logger.propagate = False
    for handler in list(logger.handlers):
        logger.removeHandler(handler)
    formatter = logging.Formatter("%(asctime)s %(message)s", "%Y-%m-%d %H:%M:%S")
    for handler in (logging.FileHandler(Path(run_dir) / runs.LOG_FILE), logging.StreamHandler(sys.stdout)):
        handler.setFormatter(formatter)
        logger.addHandler(handler)
    return logger


def run_config(spec, model_kwargs):
    return runs.RunConfig(
        model=FLAGS.model,
        model_kwargs=model_kwargs,
        dataset=spec.name,
        label_names=list(spec.label_names),
        tokenizer=spec.tokenizer,
        lower=FLAGS.lower_case,
        metric=spec.metric,
    )


def prepare_run_dir(run_dir, config):
    """Create, resume or refuse a run directory; returns True when resuming."""
    run_dir = Path(run_dir)
    if FLAGS.overwrite and run_dir.exists():
        shutil.rmtree(run_dir)
    resuming = (run_dir / runs.CONFIG_FILE).exists()
    if resuming:
        previous = runs.load_config(run_dir)
        if previous != config:
            raise app.UsageError(
                f"{run_dir} holds a run with different settings:\n  saved: {previous}\n"
                f"  now:   {config}\nUse another --run_dir, or --overwrite to start again."
            )
    run_dir.mkdir(parents=True, exist_ok=True)
    runs.save_config(run_dir, config)
    flag_lines = FLAGS.flags_into_string()
    (run_dir / runs.FLAGS_FILE).write_text(flag_lines)
    return resuming


def restore_training_state(trainer, backup_dir, logger):
    """Load the latest backup of weights and optimizer state -- or, if a kill left it half
    written, the previous one, copied back in place as ``BackupAndRestore`` itself does --
    and return the restored update count (0 for a fresh run)."""
    latest = backup_dir / "latest.weights.h5"
    metadata = backup_dir / "training_metadata.json"
    if not latest.exists():
        return 0
    try:
        trainer.load_weights(latest)
    except OSError as error:
        previous = Path(f"{latest}.bkp")
        if not previous.exists():
            raise
        logger.info(f"Backup {latest} is unreadable ({error}); using the previous one.")
        shutil.copy(previous, latest)
        if Path(f"{metadata}.bkp").exists():
            shutil.copy(f"{metadata}.bkp", metadata)
        trainer.load_weights(latest)
    step = int(trainer.optimizer.iterations.numpy())
    logger.info(f"Restored training state at update {step} from {latest}")
    return step


def train_one(run_dir, seed):
    """Train (or resume) one run; returns its results dict."""
    spec = datasets.get_dataset(FLAGS.dataset)
    data_dir = FLAGS.data_dir or datasets.default_data_dir(spec.name)
    model_kwargs = {name: getattr(FLAGS, name) for name in MODEL_FLAGS}
    config = run_config(spec, model_kwargs)
    resuming = prepare_run_dir(run_dir, config)
    logger = make_logger(run_dir)
    state_file = Path(run_dir) / "state.json"
    if state_file.exists() and json.loads(state_file.read_text()).get("finished"):
        logger.info(f"{run_dir} is a finished run; its results (use --overwrite to retrain):")
        results = json.loads((Path(run_dir) / runs.RESULTS_FILE).read_text())
        for split, result in results["splits"].items():
            logger.info(f"{split}: {format_metrics(result)}")
        return results

    keras.utils.set_random_seed(seed)
    if FLAGS.deterministic:
        tf.config.experimental.enable_op_determinism()

    train = datasets.load_split(spec.name, data_dir, "train")
    dev = datasets.load_split(spec.name, data_dir, FLAGS.eval_split)
    logger.info(f"{'Resuming' if resuming else 'Starting'} run {run_dir} (seed {seed}); "
                f"train ({len(train)}) | {FLAGS.eval_split} ({len(dev)}) from {data_dir}")
    tokens = (tok for ex in train for text in (ex.text1, ex.text2) for tok in text.split())
    vocab, vectors = vocab_and_embeddings(
        tokens, embeddings_path=FLAGS.embeddings or None, cache_dir=run_dir, min_df=FLAGS.min_df,
        lower=FLAGS.lower_case,
    )
    if vectors is None:
        logger.info(f"No --embeddings: the {FLAGS.embedding_dim}-d embedding is random and trainable.")
    else:
        covered = int((np.abs(vectors).sum(axis=1) > 0).sum())
        logger.info(f"Embeddings {FLAGS.embeddings}: {covered}/{len(vocab)} words have vectors (fixed).")

    train1, train2, train_labels = encode_pairs(train, vocab)
    train_ds, dropped = make_dataset(train1, train2, train_labels,
                                     batch_size=FLAGS.batch_size, training=True,
                                     max_len=FLAGS.max_len, seed=seed)
    kept = len(train) - dropped
    logger.info(f"#classes {spec.num_classes}; #vocab {len(vocab)}; dropped {dropped} training "
                f"pairs longer than max_len={FLAGS.max_len}; training on {kept}")

    network = MODELS[FLAGS.model](
        len(vocab), spec.num_classes, embeddings=vectors, embedding_dim=FLAGS.embedding_dim,
        **model_kwargs,
    )
    logger.info(f"trainable parameters {count_parameters(network, include_embedding=True):,d} "
                f"({count_parameters(network):,d} outside the embedding)")

    bs = FLAGS.batch_size
    steps_per_data_epoch = samples_to_steps(kept, bs)
    total_steps = FLAGS.epochs * steps_per_data_epoch
    eval_steps = samples_to_steps(FLAGS.eval_per_samples, bs)
    schedule = WarmupExponentialDecay(
        FLAGS.lr, min(FLAGS.min_lr, FLAGS.lr), samples_to_steps(FLAGS.lr_warmup_samples, bs),
        FLAGS.lr_decay_rate, samples_to_steps(FLAGS.lr_decay_samples, bs),
    )
    trainer = MatchingTrainer(network, grad_clipping=FLAGS.grad_clipping)
    trainer.compile(optimizer=keras.optimizers.Adam(schedule, beta_1=FLAGS.beta1, beta_2=FLAGS.beta2))
    sample_x, _ = next(iter(train_ds))
    trainer(sample_x)
    trainer.optimizer.build(network.trainable_variables)

    # double_checkpoint keeps the previous backup: a kill while the latest one is being
    # written (it is written in place) falls back to the one before.
    backup = keras.callbacks.BackupAndRestore(
        str(Path(run_dir) / runs.BACKUP_DIR), save_freq="epoch", double_checkpoint=True,
        delete_checkpoint=False,
    )
    start_step = restore_training_state(trainer, Path(run_dir) / runs.BACKUP_DIR, logger)

    routine = ReleaseRoutine(
        network, run_dir, spec, dev, encode_pairs(dev, vocab)[:2], spec.metric, total_steps=total_steps,
        steps_per_data_epoch=steps_per_data_epoch, eval_steps=eval_steps,
        eval_steps_warmup=samples_to_steps(FLAGS.eval_per_samples_warmup, bs),
        eval_warmup_steps=samples_to_steps(FLAGS.eval_warmup_samples, bs),
        min_steps=samples_to_steps(FLAGS.min_samples, bs),
        early_stopping_steps=samples_to_steps(FLAGS.tolerance_samples, bs),
        log_steps=samples_to_steps(FLAGS.log_per_samples, bs), eval_epoch=FLAGS.eval_epoch,
        max_loss=FLAGS.max_loss, batch_size=bs, logger=logger,
        progress=sys.stdout.isatty() if FLAGS.progress is None else FLAGS.progress,
    )
    if start_step and not routine.restore_snapshot(start_step):
        logger.info(f"No routine snapshot for update {start_step}; continuing from state.json.")
    # One Keras "epoch" = one evaluation interval over an endless, seeded stream of batches, so
    # BackupAndRestore saves the training state at every evaluation point and a resumed run
    # skips the stream to exactly where the restored state stopped.
    stream = train_ds.repeat().skip(start_step)
    if start_step < total_steps:
        trainer.fit(
            stream, epochs=math.ceil(total_steps / eval_steps), steps_per_epoch=eval_steps,
            initial_epoch=start_step // eval_steps, callbacks=[routine, backup], verbose=0,
            shuffle=False,
        )
    routine.state["finished"] = True
    if not routine.state.get("stop_reason"):
        routine.state["stop_reason"] = f"Training complete after {total_steps} updates."
        logger.info(routine.state["stop_reason"])
    results = {"seed": seed, "best_step": routine.state["best_step"], "splits": {}}
    if not (Path(run_dir) / runs.BEST_MODEL_FILE).exists():
        logger.info("Training stopped before its first evaluation: no checkpoint to score.")
        (Path(run_dir) / runs.RESULTS_FILE).write_text(json.dumps(results, indent=2) + "\n")
        routine.save_state()
        return results
    logger.info(f"Best dev {spec.metric} {routine.state['best_score']:.4f} at update "
                f"{routine.state['best_step']}.")
    best = runs.load_best_model(run_dir)
    for split in [FLAGS.eval_split] + [s for s in FLAGS.test_splits if s]:
        path = Path(data_dir) / f"{split}.txt"
        if not path.exists():
            logger.info(f"No {path}: {split} not scored.")
            continue
        examples = dev if split == FLAGS.eval_split else datasets.load_split(spec.name, data_dir, split)
        result = evaluate(best, spec, examples, vocab)
        results["splits"][split] = result
        logger.info(f"best checkpoint on {split}: {format_metrics(result)}")
    (Path(run_dir) / runs.RESULTS_FILE).write_text(json.dumps(results, indent=2) + "\n")
    routine.save_state()
    return results


def summarize(all_results):
    """Markdown table of mean ± std over seeds for every split and metric."""
    splits = list(all_results[0]["splits"])
    lines = ["| split | metric | mean ± std | runs |", "|---|---|---|---|"]
    summary = {}
    for split in splits:
        for metric in all_results[0]["splits"][split]:
            if metric == "questions":
                continue
            values = np.array([r["splits"][split][metric] for r in all_results])
            std = float(values.std(ddof=1)) if len(values) > 1 else 0.0
            summary[f"{split}/{metric}"] = {"mean": float(values.mean()), "std": std,
                                            "values": values.tolist()}
            lines.append(f"| {split} | {metric} | {values.mean():.4f} ± {std:.4f} | {len(values)} |")
    return "\n".join(lines), summary


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    if FLAGS.threads:
        tf.config.threading.set_intra_op_parallelism_threads(FLAGS.threads)
    run_dir = Path(FLAGS.run_dir or Path("checkpoints") / f"{FLAGS.dataset}-{FLAGS.model}")
    if FLAGS.repeats <= 1:
        train_one(run_dir, FLAGS.seed)
        return
    all_results = []
    for k in range(FLAGS.repeats):
        all_results.append(train_one(run_dir / f"seed{FLAGS.seed + k}", FLAGS.seed + k))
    table, summary = summarize(all_results)
    (run_dir / "results.md").write_text(table + "\n")
    (run_dir / runs.RESULTS_FILE).write_text(json.dumps(summary, indent=2) + "\n")
    print(f"\n{FLAGS.repeats} seeds ({run_dir}):\n{table}")


if __name__ == "__main__":
    app.run(main)
