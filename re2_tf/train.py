r"""Train any registered sentence-pair matching model on the shared path.

    python -m re2_tf.train --flagfile=configs/re2/sample.flags
    python -m re2_tf.train --model=re2 --dataset=wikiqa --data_dir=data/wikiqa --repeats=3
    python -m re2_tf.train --model=re2 --dataset=snli --helpfull    # RE2's flags, SNLI defaults

Flags come in three layers, each replacing the defaults of the one before:

1. the common flags below (data, vocabulary, optimiser and schedule, evaluation routine, run
   control), whose defaults are the RE2 release's (``configs/default.json5`` of the release);
2. the model's own hyper-parameters and training defaults from its
   :class:`~re2_tf.models.spec.ModelSpec` (``--model`` selects it; only that model's
   hyper-parameter flags exist, under their own names, e.g. ``--blocks``);
3. the model's preset for ``--dataset`` (``--preset=none`` skips it, ``--preset=<dataset>``
   picks another);

then the flagfile and the command line. Counts given in samples are converted to updates as
``ceil(samples / batch_size)``, as the release does. A run directory records every resolved
setting that changes results in ``config.json``; re-running the same command (or
``--flagfile=<run>/flags.txt``) resumes from the last evaluation point and refuses, naming the
field, if any setting differs; a finished run prints its results.
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
from re2_tf.data.pipeline import LONG_PAIR_POLICIES, encode_examples, make_dataset, make_triple_dataset
from re2_tf.evaluation import format_metrics
from re2_tf.models import MODEL_SPECS, count_parameters, get_spec
from re2_tf.training import MatchingTrainer
from re2_tf.training.checkpoint import TrainingBackup
from re2_tf.training.losses import TASK_LOSSES
from re2_tf.training.optimizers import OPTIMIZERS, SCHEDULES, OptimizerRecipe, build_optimizer
from re2_tf.training.routine import ReleaseRoutine, samples_to_steps
from re2_tf.training.sampling import pairwise_triples

FLAGS = flags.FLAGS
_ABSL_FLAGS = frozenset(FLAGS)  # absl's own (logging, help): not settings of a run

# data and vocabulary
flags.DEFINE_enum("model", "re2", sorted(MODEL_SPECS), "Architecture (its hyper-parameters become flags).")
flags.DEFINE_enum("dataset", "sample", sorted(datasets.DATASETS), "Dataset (label names, metric, tokeniser, preset).")
flags.DEFINE_string("preset", None, "Model preset to apply (default: --dataset's, if the model has one; 'none' = no preset).")
flags.DEFINE_string("data_dir", None, "Prepared data directory with train/dev/test.txt (default: data/<dataset>).")
flags.DEFINE_string("run_dir", None, "Run directory (default: checkpoints/<dataset>-<model>).")
flags.DEFINE_string("embeddings", None, "GloVe-format vectors (.txt, .gz or .zip). Without it (or with --embeddings=) the embedding is random and trainable.")
flags.DEFINE_integer("min_df", 5, "Keep training words seen at least this often (or having a vector).")
flags.DEFINE_bool("lower_case", True, "Lower-case text and vectors.")
flags.DEFINE_integer("max_len", 999, "Longest training text in tokens (999 = the release's 'unlimited').")
flags.DEFINE_enum("long_pairs", "drop", list(LONG_PAIR_POLICIES), "Training pairs with a longer text: drop them (the release) or truncate them; both are counted.")
flags.DEFINE_string("eval_split", "dev", "Split used for model selection.")
flags.DEFINE_list("test_splits", ["test"], "Splits scored with the best checkpoint after training (missing files are skipped).")
# optimisation
flags.DEFINE_integer("epochs", 30, "Passes over the training data.")
flags.DEFINE_integer("batch_size", 128, "Pairs (or ranking triples) per update.")
flags.DEFINE_enum("optimizer", "adam", sorted(OPTIMIZERS), "Optimiser.")
flags.DEFINE_enum("lr_schedule", "release", sorted(SCHEDULES), "Learning-rate schedule: release = linear warm-up then stepwise exponential decay (RE2); plateau = multiply by --plateau_factor when the dev metric does not improve (DRCN); linear = linear warm-up then linear decay to 0 (BERT); constant.")
flags.DEFINE_float("lr", 1e-3, "Peak learning rate.")
flags.DEFINE_float("min_lr", 6e-5, "Learning-rate floor and warm-up start (release schedule).")
flags.DEFINE_float("lr_decay_rate", 0.95, "Exponential decay factor (1 = fixed rate; release schedule).")
flags.DEFINE_integer("lr_decay_samples", 128000, "Samples between decays (release schedule).")
flags.DEFINE_integer("lr_warmup_samples", 0, "Samples of linear learning-rate warm-up (release and linear schedules).")
flags.DEFINE_float("plateau_factor", 0.85, "Learning-rate factor per evaluation without improvement (plateau schedule).")
flags.DEFINE_float("weight_decay", 0.0, "Decoupled weight decay (adamw).")
flags.DEFINE_float("beta1", 0.9, "Adam/AdamW beta1.")
flags.DEFINE_float("beta2", 0.999, "Adam/AdamW beta2.")
flags.DEFINE_float("grad_clipping", 5.0, "Clip gradients to this global norm.")
flags.DEFINE_integer("accumulation_steps", 1, "Split each batch into this many micro-batches "
                     "computed one after another and take one update on their summed "
                     "gradients (the same update with less memory; dropout and batch norm "
                     "act per micro-batch).", lower_bound=1)
flags.DEFINE_float("max_loss", 999.0, "Stop when a batch loss exceeds this (unstable training).")
flags.DEFINE_integer("group_by_length", 0, "Batch training pairs of similar length: sort the "
                     "shuffled pairs by length in windows of this many batches, then shuffle "
                     "the batches (Hugging Face's group_by_length; 0 = off, as the release). "
                     "Less padding, so fewer positions to compute; each pass still sees every "
                     "pair once.", lower_bound=0)
flags.DEFINE_integer("max_negatives", 0, "Pairwise ranking losses: at most this many negatives per positive answer (0 = all).")
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
flags.DEFINE_bool("jit_compile", False, "XLA-compile the training step (Keras turns XLA off on "
                  "CPU-only machines by default; FITN trains 2x faster with it on 2 cores). "
                  "Batches are padded to a multiple of --length_multiple so that few shapes "
                  "compile.")
flags.DEFINE_integer("length_multiple", None, "Pad each training batch's texts to a multiple "
                     "of this many positions (default: 8 with --jit_compile, else 0 = none). "
                     "The models ignore padding.")

flags.register_multi_flags_validator(
    ["jit_compile", "deterministic"],
    lambda values: not (values["jit_compile"] and values["deterministic"]),
    message="--jit_compile needs --deterministic=false: Keras silently trains without XLA "
            "while TensorFlow op determinism is enabled (keras/src/trainers/trainer.py, "
            "model_supports_jit).")

#: Flags that do not change what a run computes; every other flag is recorded in config.json.
CONTROL_FLAGS = ("run_dir", "overwrite", "progress", "threads", "repeats", "preset", "data_dir",
                 "embeddings", "test_splits", "jit_compile", "length_multiple")
#: Flags written to no run's flags.txt (they would delete or fork the run when it is rerun).
NOT_IN_FLAGS_FILE = ("overwrite", "repeats", "run_dir", "seed")


# ------------------------------------------------------------------------------ flag layers
def _sniff(args, name, default):
    """The last value given to ``--name`` in ``args`` (flagfiles already expanded), else
    ``default``."""
    value = default
    for i, arg in enumerate(args):
        if arg.startswith(f"--{name}="):
            value = arg.split("=", 1)[1]
        elif arg == f"--{name}" and i + 1 < len(args):
            value = args[i + 1]
    return value


def define_model_flags(spec, flag_values=FLAGS):
    """Define one flag per hyper-parameter of ``spec`` (type from its default)."""
    for name, hparam in spec.hparams.items():
        if name in flag_values:
            raise ValueError(f"{spec.name} hyper-parameter --{name} clashes with a common flag")
        if hparam.choices is not None:
            flags.DEFINE_enum(name, hparam.default, list(hparam.choices), hparam.help,
                              flag_values=flag_values)
            continue
        define = {bool: flags.DEFINE_bool, int: flags.DEFINE_integer,
                  float: flags.DEFINE_float, str: flags.DEFINE_string}[type(hparam.default)]
        define(name, hparam.default, hparam.help, flag_values=flag_values)


def model_defaults(spec, dataset, preset=None):
    """``{flag: default}`` of the model's training defaults and its preset for ``dataset``."""
    preset = dataset if preset is None else preset
    if preset not in spec.presets and preset not in ("none", dataset):
        raise app.UsageError(f"model {spec.name} has no preset {preset!r}; known: "
                             f"{sorted(spec.presets)} (or 'none')")
    values = dict(spec.training)
    values.update(spec.presets.get(preset, {}) if preset != "none" else {})
    return values


def parse_flags(argv):
    """absl flags parser: select the model, define its flags and defaults, then parse."""
    args = FLAGS.read_flags_from_files(list(argv[1:]), force_gnu=False)
    spec = get_spec(_sniff(args, "model", FLAGS["model"].default))
    define_model_flags(spec)
    defaults = model_defaults(spec, _sniff(args, "dataset", FLAGS["dataset"].default),
                              _sniff(args, "preset", None))
    for name, value in defaults.items():
        if name not in FLAGS:
            raise ValueError(f"{spec.name} preset sets unknown flag --{name}")
        FLAGS.set_default(name, value)
    return app.parse_flags_with_usage(argv)


# ------------------------------------------------------------------------------ run config
def _file_signature(path):
    """``{"path", "size", "mtime"}`` of a data or vectors file (what a resume must not see change)."""
    path = Path(path).resolve()
    stat = path.stat()
    return {"path": str(path), "size": stat.st_size, "mtime": int(stat.st_mtime)}


def run_config(spec, dataset, data_dir, hparams, seed):
    """The :class:`runs.RunConfig` of this invocation: every resolved setting that changes
    results (model, hyper-parameters, features, data files, vocabulary, embeddings file,
    max_len policy, optimiser, schedule, evaluation and stopping, seed)."""
    settings = {name: FLAGS[name].value for name in sorted(_TRAIN_FLAGS - set(CONTROL_FLAGS))}
    settings["seed"] = seed
    files = {split: _file_signature(Path(data_dir) / f"{split}.txt")
             for split in ("train", FLAGS.eval_split)}
    return runs.RunConfig(
        model=spec.name,
        model_kwargs=dict(hparams),
        dataset=dataset.name,
        label_names=list(dataset.label_names),
        tokenizer=dataset.tokenizer,
        lower=FLAGS.lower_case,
        metric=dataset.metric,
        features=spec.feature_options(hparams),
        output=spec.output_kind(hparams),
        settings=settings,
        data=files,
        embeddings=_file_signature(FLAGS.embeddings) if FLAGS.embeddings else None,
    )


def prepare_run_dir(run_dir, config, seed):
    """Create, resume or refuse a run directory; returns True when resuming.

    A fresh run writes ``config.json`` and ``flags.txt`` (this invocation's flags with this
    run's ``--run_dir`` and ``--seed``, never ``--overwrite``). A resume compares the saved
    config with ``config`` and refuses with the first differing field; a setting missing from
    the saved config (a flag added since) counts as that flag's default.
    """
    run_dir = Path(run_dir)
    if FLAGS.overwrite and run_dir.exists():
        shutil.rmtree(run_dir)
    resuming = (run_dir / runs.CONFIG_FILE).exists()
    if resuming:
        saved = runs.load_config(run_dir)
        # A setting added to re2_tf after the run started is read as the default it ran with.
        for name, value in config.settings.items():
            if name not in saved.settings and name in FLAGS and value == FLAGS[name].default:
                saved.settings[name] = value
        difference = runs.config_difference(saved, config)
        if difference:
            raise app.UsageError(
                f"{run_dir} holds a run with different settings: {difference}.\n"
                "Use another --run_dir, or --overwrite to start again.")
        return True
    run_dir.mkdir(parents=True, exist_ok=True)
    # This module's flags only (common flags and the model's hyper-parameters), not absl's
    # or TensorFlow's own (--verbosity, --test_srcdir, ...).
    own = sorted({flag.name for flag in FLAGS.get_flags_for_module(sys.modules[__name__])})
    lines = [FLAGS[name].serialize() for name in own if name not in NOT_IN_FLAGS_FILE]
    lines = [line for line in lines if line]
    lines += [f"--run_dir={run_dir}", f"--seed={seed}"]
    (run_dir / runs.FLAGS_FILE).write_text("\n".join(lines) + "\n")
    runs.save_config(run_dir, config)
    return False


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


def _print_finished(run_dir, logger):
    logger.info(f"{run_dir} is a finished run; its results (use --overwrite to retrain):")
    results = json.loads((Path(run_dir) / runs.RESULTS_FILE).read_text())
    for split, result in results["splits"].items():
        logger.info(f"{split}: {format_metrics(result)}")
    return results


def _optimizer_recipe(bs, total_steps):
    return OptimizerRecipe(
        name=FLAGS.optimizer, schedule=FLAGS.lr_schedule, lr=FLAGS.lr,
        min_lr=min(FLAGS.min_lr, FLAGS.lr), warmup_steps=samples_to_steps(FLAGS.lr_warmup_samples, bs),
        decay_rate=FLAGS.lr_decay_rate, decay_steps=samples_to_steps(FLAGS.lr_decay_samples, bs),
        total_steps=total_steps, plateau_factor=FLAGS.plateau_factor,
        weight_decay=FLAGS.weight_decay, beta1=FLAGS.beta1, beta2=FLAGS.beta2)


# ------------------------------------------------------------------------------ one run
def train_one(run_dir, seed):
    """Train (or resume) one run; returns its results dict."""
    spec = get_spec(FLAGS.model)
    dataset = datasets.get_dataset(FLAGS.dataset)
    data_dir = FLAGS.data_dir or datasets.default_data_dir(dataset.name)
    hparams = {name: FLAGS[name].value for name in spec.hparams}
    task_loss = TASK_LOSSES[spec.task_loss_name(hparams)]
    train = datasets.load_split(dataset.name, data_dir, "train")
    dev = datasets.load_split(dataset.name, data_dir, FLAGS.eval_split)
    vocab_settings = {"min_df": FLAGS.min_df, "lower": FLAGS.lower_case,
                      "train": _file_signature(Path(data_dir) / "train.txt"),
                      "embeddings": _file_signature(FLAGS.embeddings) if FLAGS.embeddings else None}
    try:
        cached = runs.load_vocab_cache(run_dir, vocab_settings)
    except ValueError as error:
        raise app.UsageError(str(error)) from None
    vocab, vectors = cached or vocab_and_embeddings(
        (tok for ex in train for text in (ex.text1, ex.text2) for tok in text.split()),
        embeddings_path=FLAGS.embeddings or None, min_df=FLAGS.min_df, lower=FLAGS.lower_case)
    if vectors is not None and "embedding_dim" in hparams:
        hparams["embedding_dim"] = int(vectors.shape[1])
    config = run_config(spec, dataset, data_dir, hparams, seed)
    resuming = prepare_run_dir(run_dir, config, seed)
    if cached is None:
        runs.save_vocab_cache(run_dir, vocab, vectors, vocab_settings)
    logger = make_logger(run_dir)
    routine_state = Path(run_dir) / "state.json"
    if routine_state.exists() and json.loads(routine_state.read_text()).get("finished"):
        return _print_finished(run_dir, logger)

    keras.utils.set_random_seed(seed)
    if FLAGS.deterministic:
        tf.config.experimental.enable_op_determinism()
    logger.info(f"{'Resuming' if resuming else 'Starting'} {spec.name} run {run_dir} (seed {seed}); "
                f"train ({len(train)}) | {FLAGS.eval_split} ({len(dev)}) from {data_dir}")
    if "word_ids" not in config.features:
        logger.info(f"{spec.name} takes no word ids: the word vocabulary and --embeddings are "
                    "not used.")
    elif vectors is None:
        logger.info("No --embeddings: word embeddings are random and trainable.")
    else:
        covered = int((np.abs(vectors).sum(axis=1) > 0).sum())
        logger.info(f"Embeddings {FLAGS.embeddings}: {covered}/{len(vocab)} words have vectors (fixed).")

    featurizers = runs.make_featurizers(run_dir, config.features, vocab, train)
    encoded = encode_examples(train, featurizers, max_len=FLAGS.max_len,
                              long_pairs=FLAGS.long_pairs, training=True)
    for featurizer in featurizers:
        for what, count in featurizer.stats.items():
            logger.info(f"{featurizer.kind}: {count} {what} in the training data")
    bs = FLAGS.batch_size
    multiple = FLAGS.length_multiple
    if multiple is None:
        multiple = 8 if FLAGS.jit_compile else 0
    if task_loss.triples:
        triples, stats = pairwise_triples(
            [train[i].qid for i in encoded.kept], encoded.labels,
            max_negatives=FLAGS.max_negatives or None, seed=seed)
        train_ds = make_triple_dataset(encoded, triples, batch_size=bs, seed=seed,
                                       length_multiple=multiple,
                                       group_by_length=FLAGS.group_by_length)
        units = len(triples)
        logger.info(f"{units} ranking triples; {stats}")
    else:
        train_ds = make_dataset(encoded, batch_size=bs, training=True, seed=seed,
                                length_multiple=multiple, group_by_length=FLAGS.group_by_length)
        units = len(encoded)
    logger.info(f"#classes {dataset.num_classes}; #vocab {len(vocab)}; {encoded.dropped} training "
                f"pairs longer than max_len={FLAGS.max_len} dropped, {encoded.truncated} "
                f"truncated; training on {len(encoded)}")

    network = spec.build(dataset.num_classes, {f.kind: f.vocab_size for f in featurizers},
                         vectors, **hparams)
    logger.info(f"trainable parameters {count_parameters(network, include_embedding=True):,d} "
                f"({count_parameters(network):,d} outside the embedding)")

    steps_per_data_epoch = samples_to_steps(units, bs)
    total_steps = FLAGS.epochs * steps_per_data_epoch
    eval_steps = samples_to_steps(FLAGS.eval_per_samples, bs)
    optimizer, lr_controller = build_optimizer(_optimizer_recipe(bs, total_steps))
    trainer = MatchingTrainer(network, task_loss=task_loss, grad_clipping=FLAGS.grad_clipping,
                              accumulation_steps=FLAGS.accumulation_steps)
    trainer.compile(optimizer=optimizer, jit_compile=FLAGS.jit_compile)
    sample, _ = next(iter(train_ds))
    network(sample["positive"] if task_loss.triples else sample)
    optimizer.build(network.trainable_variables)

    backup = TrainingBackup(Path(run_dir) / runs.BACKUP_DIR, network, optimizer)
    start_step = backup.restore()
    if start_step:
        logger.info(f"Restored training state at update {start_step} from {backup.path}")

    routine = ReleaseRoutine(
        network, run_dir, dataset, dev, encode_examples(dev, featurizers), dataset.metric,
        total_steps=total_steps, steps_per_data_epoch=steps_per_data_epoch, eval_steps=eval_steps,
        eval_steps_warmup=samples_to_steps(FLAGS.eval_per_samples_warmup, bs),
        eval_warmup_steps=samples_to_steps(FLAGS.eval_warmup_samples, bs),
        min_steps=samples_to_steps(FLAGS.min_samples, bs),
        early_stopping_steps=samples_to_steps(FLAGS.tolerance_samples, bs),
        log_steps=samples_to_steps(FLAGS.log_per_samples, bs), eval_epoch=FLAGS.eval_epoch,
        max_loss=FLAGS.max_loss, batch_size=bs, logger=logger, lr_controller=lr_controller,
        progress=sys.stdout.isatty() if FLAGS.progress is None else FLAGS.progress,
    )
    if start_step and not routine.restore_snapshot(start_step):
        logger.info(f"No routine snapshot for update {start_step}; continuing from state.json.")
    # One Keras "epoch" = one evaluation interval over an endless, seeded stream of batches, so
    # the backup saves the training state at every evaluation point and a resumed run skips the
    # stream to exactly where the restored state stopped.
    stream = train_ds.repeat().skip(start_step)
    if start_step < total_steps:
        trainer.fit(
            stream, epochs=math.ceil(total_steps / eval_steps), steps_per_epoch=eval_steps,
            initial_epoch=start_step // eval_steps, callbacks=[routine, backup], verbose=0,
            shuffle=False,
        )
    return finish_run(run_dir, routine, dataset, data_dir, dev, featurizers, total_steps, logger,
                      seed)


def finish_run(run_dir, routine, dataset, data_dir, dev, featurizers, total_steps, logger, seed):
    """Mark the run finished, score the best checkpoint on the eval and test splits, write
    ``results.json``; returns the results dict."""
    from re2_tf.evaluation import evaluate

    routine.state["finished"] = True
    if not routine.state.get("stop_reason"):
        routine.state["stop_reason"] = f"Training complete after {total_steps} updates."
        logger.info(routine.state["stop_reason"])
    results = {"seed": seed, "best_step": routine.state["best_step"], "splits": {}}
    if not (Path(run_dir) / runs.BEST_MODEL_FILE).exists():
        logger.info("Training stopped before its first evaluation: no checkpoint to score.")
    else:
        logger.info(f"Best dev {dataset.metric} {routine.state['best_score']:.4f} at update "
                    f"{routine.state['best_step']}.")
        best = runs.load_best_model(run_dir)
        for split in [FLAGS.eval_split] + [s for s in FLAGS.test_splits if s]:
            path = Path(data_dir) / f"{split}.txt"
            if not path.exists():
                logger.info(f"No {path}: {split} not scored.")
                continue
            examples = dev if split == FLAGS.eval_split else datasets.load_split(dataset.name, data_dir, split)
            results["splits"][split] = evaluate(best, dataset, examples, featurizers)
            logger.info(f"best checkpoint on {split}: {format_metrics(results['splits'][split])}")
    (Path(run_dir) / runs.RESULTS_FILE).write_text(json.dumps(results, indent=2) + "\n")
    routine.save_state()
    return results


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
    table, summary = runs.summarize_results(all_results)
    (run_dir / "results.md").write_text(table + "\n")
    (run_dir / runs.RESULTS_FILE).write_text(json.dumps(summary, indent=2) + "\n")
    print(f"\n{FLAGS.repeats} seeds ({run_dir}):\n{table}")


_TRAIN_FLAGS = frozenset(FLAGS) - _ABSL_FLAGS  # the common flags defined above

if __name__ == "__main__":
    app.run(main, flags_parser=parse_flags)
