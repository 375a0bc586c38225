"""Training as a call: ``re2_tf.fit(config) -> RunResult``.

:func:`fit` trains (or resumes, or reports) one run described by a
:class:`re2_tf.config.TrainConfig`, exactly as ``re2-train`` does from flags: the same run
directory layout (:mod:`re2_tf.runs`), the same records (``config.json``, ``flags.txt``,
``train.log``, ``results.json``, TensorBoard summaries), the same release routine
(:class:`re2_tf.training.routine.ReleaseRoutine`) and resume. Every setting is checked before
anything is written: a :class:`re2_tf.errors.ConfigError` names the setting.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import shutil
import sys
import tempfile
import time
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

from re2_tf import runs
from re2_tf.config import CONTROL_FIELDS, TrainConfig, layered_defaults
from re2_tf.data import datasets
from re2_tf.data.embeddings import vocab_and_embeddings
from re2_tf.data.pipeline import encode_examples, make_dataset, make_triple_dataset
from re2_tf.errors import ConfigError
from re2_tf.evaluation import evaluate_examples, format_metrics
from re2_tf.machine import describe_machine, machine
from re2_tf.matcher import Matcher
from re2_tf.models import count_parameters
from re2_tf.training import MatchingTrainer, precision
from re2_tf.training.checkpoint import TrainingBackup
from re2_tf.training.distribution import broadcast_from_chief, make_strategy, reporting_lost_workers
from re2_tf.training.losses import output_kind, resolve_task_loss
from re2_tf.training.optimizers import OptimizerRecipe, build_optimizer
from re2_tf.training.routine import ReleaseRoutine
from re2_tf.training.sampling import pairwise_triples

__all__ = ["RunResult", "fit", "run_config", "flags_file_lines", "preset_line"]

#: Settings written to no run's ``flags.txt`` (they would delete or fork the run when it is
#: rerun); ``--run_dir`` and ``--seed`` are written with the run's own values.
NOT_IN_FLAGS_FILE = ("overwrite", "repeats", "run_dir", "seed")


@dataclasses.dataclass(frozen=True)
class RunResult:
    """What :func:`fit` returns.

    Attributes:
        run_dir: the run directory (for ``repeats > 1``, the parent of ``seed<k>/``).
        config: the :class:`~re2_tf.config.TrainConfig` that ran (its seed for one run).
        metric: the dataset's model-selection metric (``acc``, ``mrr``, ``map``, ``f1``).
        best_score: best score on the selection split (float), ``None`` when training
            stopped before its first evaluation, or for ``repeats > 1``.
        best_step: update of the best checkpoint (int; 0 when there is none).
        scores: ``{split: {metric: value}}`` of the best checkpoint on the selection split
            and every test split that exists (``results.json``'s ``splits``).
        stop_reason: why training stopped (the log's last word on it).
        wall_time: seconds this call took (float).
        best_model: path of ``best.keras``, or ``None`` when there is none.
        seeds: for ``repeats > 1``, each seed's :class:`RunResult`; else ``()``.
        summary: for ``repeats > 1``, ``{"<split>/<metric>": {"mean", "std", "values",
            "seeds"}}`` (:func:`re2_tf.runs.summarize_results`); else ``None``.
    """

    run_dir: Path
    config: TrainConfig
    metric: str
    best_score: float | None
    best_step: int
    scores: dict
    stop_reason: str
    wall_time: float
    best_model: Path | None
    seeds: tuple = ()
    summary: dict | None = None

    @property
    def dev_scores(self) -> dict:
        """The best checkpoint's metrics on the selection split (``{}`` if not scored)."""
        return self.scores.get(self.config.eval_split, {})

    @property
    def test_scores(self) -> dict:
        """``{split: metrics}`` of the best checkpoint on the test splits that were scored."""
        return {s: m for s, m in self.scores.items() if s != self.config.eval_split}

    def matcher(self, **options):
        """The run's best checkpoint as a :class:`re2_tf.Matcher`
        (``Matcher.from_run(self.run_dir, **options)``; loads ``best.keras``).

        Raises:
            ValueError: a result of ``repeats > 1`` (one model per seed: use
                ``result.seeds[k].matcher()``). FileNotFoundError: training stopped before
                its first checkpoint (``best_model`` is ``None``), or a worker's result.
        """

        if self.seeds:
            raise ValueError(
                f"{self.run_dir} holds {len(self.seeds)} seeds' runs: take one seed's "
                "matcher, result.seeds[k].matcher()"
            )
        if self.best_model is None:
            raise FileNotFoundError(f"{self.run_dir}: no best checkpoint to load")
        return Matcher.from_run(self.run_dir, **options)


# ------------------------------------------------------------------------------ records
def _file_signature(path):
    """``{"path", "size", "mtime"}`` of a data or vectors file (what a resume must not see
    change)."""
    path = Path(path).resolve()
    stat = path.stat()
    return {"path": str(path), "size": stat.st_size, "mtime": int(stat.st_mtime)}


def settings_record(config: TrainConfig) -> dict:
    """``config.json``'s ``settings``: every setting that changes results and is not
    recorded elsewhere in it (:data:`re2_tf.config.CONTROL_FIELDS` are left out)."""
    return {
        name: value
        for name, value in sorted(config.as_dict().items())
        if name not in CONTROL_FIELDS
    }


def run_config(config: TrainConfig, hparams: dict) -> runs.RunConfig:
    """The :class:`re2_tf.runs.RunConfig` recorded in ``config.json``: model and resolved
    hyper-parameters, dataset facts, features, data and vectors file signatures, settings."""

    spec, dataset = config.spec, config.dataset_spec
    data_dir = config.resolved_data_dir
    return runs.RunConfig(
        model=spec.name,
        model_kwargs=dict(hparams),
        dataset=dataset.name,
        label_names=list(dataset.label_names),
        tokenizer=dataset.tokenizer,
        lower=config.lower_case,
        metric=dataset.metric,
        features=spec.feature_options(hparams),
        output=output_kind(spec, hparams),
        settings=settings_record(config),
        data={
            **{
                split: _file_signature(data_dir / f"{split}.txt")
                for split in ("train", config.eval_split)
            },
            "fingerprint": runs.data_identity(config)["fingerprint"],
        },
        embeddings=_file_signature(config.embeddings) if config.embeddings else None,
    )


def flags_file_lines(config: TrainConfig, run_dir) -> list[str]:
    """``flags.txt``: the flags that rebuild ``config`` (``re2-train --flagfile=<it>``
    resumes the run): model, dataset and every setting and hyper-parameter with its resolved
    value, then ``--run_dir`` and ``--seed``; never ``--overwrite`` or ``--repeats``."""
    lines = []
    values = config.as_dict()
    values.update(config.hparams)
    for name in sorted(values):
        value = values[name]
        if name in NOT_IN_FLAGS_FILE or name == "hparams" or value is None:
            continue
        if name in ("labels", "metric", "tokenizer") and config.dataset != "custom":
            continue
        if isinstance(value, bool):
            lines.append(f"--{name}" if value else f"--no{name}")
        elif isinstance(value, (list, tuple)):
            lines.append(f"--{name}={','.join(map(str, value))}")
        else:
            lines.append(f"--{name}={value}")
    return lines + [f"--run_dir={run_dir}", f"--seed={config.seed}"]


def _prepare_run_dir(run_dir: Path, config: TrainConfig, record: runs.RunConfig) -> bool:
    """Create, resume or refuse a run directory; True when resuming.

    Raises:
        ConfigError: the directory holds a run with other settings (names the first
            differing field), or cannot be created (names ``run_dir`` and the reason).
    """
    if (run_dir / runs.CONFIG_FILE).exists():
        saved = runs.load_config(run_dir)
        defaults = layered_defaults(config.model, config.dataset)
        # A setting added to re2_tf after the run started reads as the default it ran with.
        for name, value in record.settings.items():
            if name not in saved.settings and value == defaults.get(name):
                saved.settings[name] = value
        # So does a hyper-parameter added to the model after the run started.
        model_defaults = config.spec.defaults()
        for name, value in record.model_kwargs.items():
            if name not in saved.model_kwargs and value == model_defaults.get(name, object()):
                saved.model_kwargs[name] = value
        # A run started before runs recorded their data fingerprint: its file signatures
        # (size, mtime) still guard its data.
        saved.data.setdefault("fingerprint", record.data["fingerprint"])
        difference = runs.config_difference(saved, record)
        if difference:
            raise ConfigError(
                f"run_dir: {run_dir} holds a run with different settings: "
                f"{difference}. Use another run_dir, or overwrite to start "
                "again.",
                field="run_dir",
            )
        return True
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / runs.RUN_FLAGFILE).write_text("\n".join(flags_file_lines(config, run_dir)) + "\n")
    runs.save_config(run_dir, record)
    return False


def _create_run_dir(run_dir: Path):
    """Create the run directory (the run's first write, once every setting and data file
    has been checked).

    Raises:
        ConfigError: naming ``run_dir`` when it cannot be created (a file in its path, a
            read-only or forbidden location).
    """
    probe = run_dir
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if probe.exists() and not probe.is_dir():
        raise ConfigError(
            f"run_dir: {probe} is a file, so {run_dir} cannot be created", field="run_dir"
        )
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        probe_file = run_dir / ".write_check"
        probe_file.write_text("")
        probe_file.unlink()
    except OSError as error:
        raise ConfigError(
            f"run_dir: cannot write {run_dir}: {error.strerror or error} "
            "(choose a writable run_dir)",
            field="run_dir",
        ) from None


#: The parent of every run's logger (``re2_tf.train.<run_dir>``): its records reach the
#: handlers of this logger and of its ancestors (``re2-train`` prints them on stdout,
#: :func:`console_handler`); :func:`fit` itself writes nothing to stdout or stderr.
TRAIN_LOGGER = "re2_tf.train"


def log_formatter():
    """The training log's line format: ``<date> <time> <message>``."""
    return logging.Formatter("%(asctime)s %(message)s", "%Y-%m-%d %H:%M:%S")


def console_handler(stream=None):
    """Show the training log's lines on ``stream`` (default ``sys.stdout``) as ``re2-train``
    does: a handler on :data:`TRAIN_LOGGER` in the log's format, that logger's records no
    longer passed to the root logger's handlers (they would be shown twice). Returns the
    handler (``logging.getLogger(TRAIN_LOGGER).removeHandler(it)`` undoes it)."""
    handler = logging.StreamHandler(sys.stdout if stream is None else stream)
    handler.setFormatter(log_formatter())
    logger = logging.getLogger(TRAIN_LOGGER)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    logger.addHandler(handler)
    return handler


def _make_logger(run_dir):
    """The run's logger: writes ``<run_dir>/train.log`` and passes its records on to
    :data:`TRAIN_LOGGER`."""
    logger = logging.getLogger(f"{TRAIN_LOGGER}.{run_dir}")
    logger.setLevel(logging.INFO)
    logger.propagate = True
    for handler in list(logger.handlers):
        handler.close()
        logger.removeHandler(handler)
    handler = logging.FileHandler(Path(run_dir) / runs.LOG_FILE)
    handler.setFormatter(log_formatter())
    logger.addHandler(handler)
    return logger


def _write_hparams_summary(run_dir: Path, config: TrainConfig):
    """TensorBoard HParams record of the run (every setting and hyper-parameter), so the
    runs of a sweep can be compared in the dashboard's HParams tab against ``dev/<metric>``."""
    # lazy: TensorBoard's hparams plugin defines absl flags when imported (a command's flags
    # would clash); imported when a run writes its record
    from tensorboard.plugins.hparams import api as hp

    values = {}
    for name, value in {
        **config.as_dict(),
        **{f"hparams.{k}": v for k, v in config.hparams.items()},
    }.items():
        if name == "hparams" or value is None:
            continue
        values[name] = value if isinstance(value, (bool, int, float, str)) else json.dumps(value)
    writer = tf.summary.create_file_writer(str(run_dir / runs.TENSORBOARD_DIR))
    with writer.as_default():
        hp.hparams(values, trial_id=str(run_dir))
    writer.close()


def _result_from_record(run_dir, config, results, state, wall_time):
    best = Path(run_dir) / runs.BEST_MODEL_FILE
    return RunResult(
        run_dir=Path(run_dir),
        config=config,
        metric=config.dataset_spec.metric,
        best_score=state.get("best_score") if best.exists() else None,
        best_step=int(results.get("best_step") or 0),
        scores=results.get("splits", {}),
        stop_reason=state.get("stop_reason", ""),
        wall_time=wall_time,
        best_model=best if best.exists() else None,
    )


def preset_line(config: TrainConfig) -> str:
    """The training log's line naming the preset applied to ``config`` and its settings:
    ``preset: sample (blocks=2, ...)``, or ``preset: none (...)`` saying why none was
    (``preset="none"``, or the model has no preset for the dataset: its presets are listed).
    Settings the caller gave explicitly win over the preset's (the line says which)."""
    spec = config.spec
    preset = config.dataset if config.preset is None else config.preset
    if preset == "none":
        return "preset: none (preset=none)"
    applied = spec.presets.get(preset)
    if applied is None:
        return (
            f"preset: none ({spec.name} has no preset for {preset}; its presets: "
            f"{', '.join(sorted(spec.presets)) or '(none)'})"
        )
    overridden = sorted(
        name for name in applied if name in config.explicit or f"hparams.{name}" in config.explicit
    )
    return f"preset: {preset} ({', '.join(f'{k}={v}' for k, v in applied.items())})" + (
        f"; overridden by the caller: {', '.join(overridden)}" if overridden else ""
    )


# ------------------------------------------------------------------------------ one run
def _train_one(config: TrainConfig, run_dir: Path, callbacks=()) -> RunResult:
    """Train (or resume, or report) one run; see :func:`fit`. In a multi-worker run, a
    collective that fails because a worker is gone raises
    :class:`~re2_tf.errors.WorkerLostError`."""
    if config.distribution != "multi_worker":
        return _train_run(config, run_dir, callbacks)

    with reporting_lost_workers(run_dir / runs.BACKUP_DIR):
        return _train_run(config, run_dir, callbacks)


def _train_run(config: TrainConfig, run_dir: Path, callbacks=()) -> RunResult:
    """:func:`_train_one`'s run."""

    started, cpu_started = time.perf_counter(), time.process_time()
    spec, dataset = config.spec, config.dataset_spec
    data_dir = config.resolved_data_dir
    seed = config.seed
    hparams = dict(config.hparams)
    task_loss = resolve_task_loss(spec, hparams)
    # Read and check everything before the run directory is touched.
    config.check_files()
    if config.threads:
        try:
            tf.config.threading.set_intra_op_parallelism_threads(config.threads)
        except RuntimeError:  # TensorFlow already started: its thread pool is fixed
            pass
    # Before TensorFlow's first op: the CPU split and multi-worker collectives are set then.
    strategy, worker = make_strategy(config.distribution, config.devices, config.logical_cpus)
    given_dir = run_dir
    chief_dir = run_dir  # what this process reads a resumed or finished run from
    if not worker.is_chief:
        # TensorFlow's multi-worker convention: only the chief writes the run directory;
        # this worker writes to its own temporary directory and reads the chief's backup
        # (not with overwrite: the chief is deleting it).
        run_dir = Path(tempfile.mkdtemp(prefix=f"re2_tf-{worker.task_type}{worker.task_id}-"))
        if config.overwrite:
            chief_dir = run_dir
    train = datasets.load_split(dataset, data_dir, "train", lower=config.lower_case)
    dev = datasets.load_split(dataset, data_dir, config.eval_split, lower=config.lower_case)
    if config.overwrite and run_dir.exists():
        shutil.rmtree(run_dir)  # before the vocabulary cache is read from it
    _create_run_dir(run_dir)
    # The word vocabulary (and its embedding matrix) exists only for models that take word
    # ids; the others (BERT+MatchLSTM: word pieces) neither build, cache nor log one.
    uses_words = "word_ids" in spec.feature_options(hparams)
    vocab = vectors = cached = None
    if uses_words:
        vocab_settings = {
            "min_df": config.min_df,
            "lower": config.lower_case,
            "train": _file_signature(data_dir / "train.txt"),
            "embeddings": (_file_signature(config.embeddings) if config.embeddings else None),
        }
        try:
            cached = runs.load_vocab_cache(run_dir, vocab_settings)
        except ValueError as error:
            raise ConfigError(str(error), field="run_dir") from None
        vocab, vectors = cached or vocab_and_embeddings(
            (tok for ex in train for text in (ex.text1, ex.text2) for tok in text.split()),
            embeddings_path=config.embeddings or None,
            min_df=config.min_df,
            lower=config.lower_case,
        )
    if vectors is not None and "embedding_dim" in hparams:
        hparams["embedding_dim"] = int(vectors.shape[1])
    record = run_config(config, hparams)
    resuming = _prepare_run_dir(run_dir, config, record)
    if uses_words and cached is None:
        runs.save_vocab_cache(run_dir, vocab, vectors, vocab_settings)
    logger = _make_logger(run_dir)
    state_path = chief_dir / "state.json"
    if state_path.exists() and json.loads(state_path.read_text()).get("finished"):
        logger.info(f"{run_dir} is a finished run; its results (overwrite to retrain):")
        results = json.loads((chief_dir / runs.RESULTS_FILE).read_text())
        for split, result in results["splits"].items():
            logger.info(f"{split}: {format_metrics(result)}")
        return _result_from_record(
            chief_dir,
            config,
            results,
            json.loads(state_path.read_text()),
            time.perf_counter() - started,
        )

    keras.utils.set_random_seed(seed)
    if config.deterministic:
        tf.config.experimental.enable_op_determinism()
    logger.info(
        f"{'Resuming' if resuming else 'Starting'} {spec.name} run {run_dir} "
        f"(seed {seed}); train ({len(train)}) | {config.eval_split} ({len(dev)}) "
        f"from {data_dir}"
    )

    # Each attempt names its CPU, so a record's times can be read against the machine
    # (a resumed run may have run on two).
    logger.info(
        f"CPU: {describe_machine(machine())}; intra-op threads: "
        f"{config.threads or 'TensorFlow default'}"
    )
    logger.info(preset_line(config))
    if config.distribution != "none":
        logger.info(
            f"distribution={config.distribution}: {worker.replicas} replicas in sync "
            f"({worker.num_workers} worker{'s' if worker.num_workers > 1 else ''}; this is "
            f"{'the chief' if worker.is_chief else f'{worker.task_type} {worker.task_id}'}"
            f"{'' if worker.is_chief else f', writing to {run_dir}'}); each computes "
            f"{config.batch_size / worker.replicas:g} of the {config.batch_size} pairs "
            "of a batch"
        )
    if not resuming:
        _write_hparams_summary(run_dir, config)
    if not uses_words:
        logger.info(
            f"{spec.name} takes no word ids: no word vocabulary is built"
            + (f" and --embeddings={config.embeddings} is not read." if config.embeddings else ".")
        )
    elif vectors is None:
        logger.info("No embeddings file: word embeddings are random and trainable.")
    else:
        covered = int((np.abs(vectors).sum(axis=1) > 0).sum())
        logger.info(
            f"Embeddings {config.embeddings}: {covered}/{len(vocab)} words have vectors (fixed)."
        )

    featurizers = runs.make_featurizers(run_dir, record.features, vocab, train)
    encoded = encode_examples(
        train,
        featurizers,
        max_len=config.max_len_or_none,
        long_pairs=config.long_pairs,
        training=True,
    )
    for featurizer in featurizers:
        for what, count in featurizer.stats.items():
            logger.info(f"{featurizer.kind}: {count} {what} in the training data")
    bs = config.batch_size
    multiple = config.length_multiple
    if multiple is None:
        multiple = 8 if config.jit_compile else 0
    if task_loss.triples:
        triples, stats = pairwise_triples(
            [train[i].qid for i in encoded.kept],
            encoded.labels,
            max_negatives=config.max_negatives or None,
            seed=seed,
        )
        units = len(triples)
        logger.info(f"{units} ranking triples; {stats}")
    else:
        triples, units = None, len(encoded)
    # An endless stream, each pass shuffled with seeds of its own: the same batches however
    # often it is iterated (the batch that builds the network, a strategy's copies of it).
    stream_options = dict(
        batch_size=bs,
        seed=seed,
        length_multiple=multiple,
        group_by_length=config.group_by_length,
        endless=True,
        # under op determinism tf.data runs the stream's map sequentially anyway; asking for
        # that spares a rewrite that logs a spurious error (re2_tf.data.pipeline._map_batches)
        parallel=not config.deterministic,
    )
    train_ds = (
        make_dataset(encoded, training=True, **stream_options)
        if triples is None
        else make_triple_dataset(encoded, triples, **stream_options)
    )
    limit = config.max_len or "unlimited"
    logger.info(
        f"#classes {dataset.num_classes}; "
        + (f"#vocab {len(vocab)}; " if vocab is not None else "")
        + f"{encoded.dropped} "
        f"training pairs longer than max_len={limit} dropped, {encoded.truncated} "
        f"truncated; training on {len(encoded)}"
    )

    with strategy.scope():  # variables (network, optimizer) are created by the strategy
        with precision.dtype_policy(config.mixed_precision):
            network = spec.build(
                dataset.num_classes, {f.kind: f.vocab_size for f in featurizers}, vectors, **hparams
            )
        network = precision.float32_outputs(network)
        logger.info(
            f"trainable parameters {count_parameters(network, include_embedding=True):,d} "
            f"({count_parameters(network):,d} outside the embedding)"
        )

        steps_per_data_epoch = config.steps(units)
        total_steps = config.epochs * steps_per_data_epoch
        limit = config.updates_for_samples(config.max_samples, units) if config.max_samples else 0
        if limit and limit < total_steps:
            total_steps = limit
            unit = "triples" if task_loss.triples else "pairs"
            logger.info(
                f"max_samples={config.max_samples}: training stops after {total_steps} updates "
                f"({total_steps / steps_per_data_epoch:.2f} of {config.epochs} passes of "
                f"{steps_per_data_epoch} updates over {units} {unit}; "
                f"{config.samples_seen(total_steps, units):,d} {unit} seen)"
            )
        eval_steps = config.steps(config.eval_per_samples)
        optimizer, lr_controller = build_optimizer(
            OptimizerRecipe(
                name=config.optimizer,
                schedule=config.lr_schedule,
                lr=config.lr,
                min_lr=min(config.min_lr, config.lr),
                warmup_steps=config.warmup_steps(total_steps),
                decay_rate=config.lr_decay_rate,
                decay_steps=config.steps(config.lr_decay_samples),
                total_steps=total_steps,
                plateau_factor=config.plateau_factor,
                weight_decay=config.weight_decay,
                beta1=config.beta1,
                beta2=config.beta2,
            )
        )
        optimizer = precision.loss_scaled(optimizer, config.mixed_precision)
        trainer = MatchingTrainer(
            network,
            task_loss=task_loss,
            grad_clipping=config.grad_clipping,
            accumulation_steps=config.accumulation_steps,
        )
        trainer.compile(optimizer=optimizer, jit_compile=config.jit_compile)
        sample, _ = next(iter(train_ds))
        network(sample["positive"] if task_loss.triples else sample)
        optimizer.build(network.trainable_variables)

    backup = TrainingBackup(
        run_dir / runs.BACKUP_DIR, network, optimizer, restore_from=chief_dir / runs.BACKUP_DIR
    )
    start_step = backup.restore()
    if start_step:
        logger.info(f"{runs.RESTORED_MESSAGE} {start_step} from {backup.path}")

    routine = ReleaseRoutine(
        network,
        run_dir,
        dataset,
        dev,
        encode_examples(dev, featurizers),
        dataset.metric,
        total_steps=total_steps,
        steps_per_data_epoch=steps_per_data_epoch,
        eval_steps=eval_steps,
        eval_steps_warmup=config.steps(config.eval_per_samples_warmup),
        eval_warmup_steps=config.steps(config.eval_warmup_samples),
        min_steps=config.steps(config.min_samples),
        early_stopping_steps=config.steps(config.tolerance_samples),
        log_steps=config.steps(config.log_per_samples),
        eval_epoch=config.eval_epoch,
        max_loss=config.max_loss,
        batch_size=bs,
        logger=logger,
        lr_controller=lr_controller,
        progress=sys.stdout.isatty() if config.progress is None else config.progress,
        strategy=strategy,
        is_chief=worker.is_chief,
        clock=(started, cpu_started),
    )
    if start_step and not routine.restore_snapshot(start_step, chief_dir / runs.BACKUP_DIR):
        logger.info(f"No routine snapshot for update {start_step}; continuing from state.json.")
    # One Keras "epoch" = one evaluation interval over an endless, seeded stream of batches,
    # so the backup saves the training state at every evaluation point and a resumed run
    # skips the stream to exactly where the restored state stopped.
    stream = train_ds.skip(start_step)
    if worker.num_workers > 1:
        # Every worker reads the same seeded stream; the strategy splits each global batch
        # into per-replica rows and gives each worker its own (sharding by data, not files).
        options = tf.data.Options()
        options.experimental_distribute.auto_shard_policy = (
            tf.data.experimental.AutoShardPolicy.DATA
        )
        stream = stream.with_options(options)
    if start_step < total_steps:
        trainer.fit(
            stream,
            epochs=math.ceil(total_steps / eval_steps),
            steps_per_epoch=eval_steps,
            initial_epoch=start_step // eval_steps,
            callbacks=[routine, backup, *callbacks],
            verbose=0,
            shuffle=False,
        )
    if not worker.is_chief:
        # The chief scores the best checkpoint and writes results.json; a worker waits for it
        # (workers leaving first make the chief's collectives report them as crashed),
        # returns the decisions it shared with the chief, and removes its temporary directory.
        broadcast_from_chief(strategy, 0.0)
        for handler in list(logger.handlers):
            handler.close()
            logger.removeHandler(handler)
        shutil.rmtree(run_dir, ignore_errors=True)
        best = routine.state["best_score"]
        return RunResult(
            run_dir=given_dir,
            config=config,
            metric=dataset.metric,
            best_score=float(best) if np.isfinite(best) else None,
            best_step=int(routine.state["best_step"]),
            scores={},
            stop_reason=routine.state.get("stop_reason") or "",
            wall_time=time.perf_counter() - started,
            best_model=None,
        )
    data = {"dataset": dataset.name, "fingerprint": record.data["fingerprint"]}
    results = _finish_run(
        config, run_dir, routine, dataset, data_dir, dev, featurizers, total_steps, logger, data
    )
    broadcast_from_chief(strategy, 0.0)  # the workers wait for results.json (no-op alone)
    return _result_from_record(
        run_dir, config, results, routine.state, time.perf_counter() - started
    )


def _finish_run(
    config, run_dir, routine, dataset, data_dir, dev, featurizers, total_steps, logger, data
):
    """Mark the run finished, score the best checkpoint on the test splits (on the selection
    split its scores are those it was selected on), write ``results.json`` (with ``data``,
    :func:`re2_tf.runs.data_identity`); returns the results dict."""

    routine.state["finished"] = True
    if not routine.state.get("stop_reason"):
        routine.state["stop_reason"] = f"Training complete after {total_steps} updates."
        logger.info(routine.state["stop_reason"])
    results = {"seed": config.seed, "best_step": routine.state["best_step"], "splits": {}}
    if not (run_dir / runs.BEST_MODEL_FILE).exists():
        logger.info("Training stopped before its first evaluation: no checkpoint to score.")
    else:
        logger.info(
            f"Best dev {dataset.metric} {routine.state['best_score']:.4f} at update "
            f"{routine.state['best_step']}."
        )
        best = runs.load_best_model(run_dir)
        selected = routine.state.get("best_metrics")
        for split in [config.eval_split] + [s for s in config.test_splits if s]:
            if split == config.eval_split and selected:
                # The scores the best checkpoint was selected on (the routine scored these
                # examples with this network before saving it): not scored a second time.
                results["splits"][split] = dict(selected)
                logger.info(f"best checkpoint on {split}: {format_metrics(selected)}")
                continue
            path = Path(data_dir) / f"{split}.txt"
            if not path.exists():
                logger.info(f"No {path}: {split} not scored.")
                continue
            examples = (
                dev
                if split == config.eval_split
                else datasets.load_split(dataset, data_dir, split, lower=config.lower_case)
            )
            results["splits"][split] = evaluate_examples(best, dataset, examples, featurizers)
            logger.info(f"best checkpoint on {split}: {format_metrics(results['splits'][split])}")
    results["data"] = data
    (run_dir / runs.RESULTS_FILE).write_text(json.dumps(results, indent=2) + "\n")
    routine.save_state()
    return results


def fit(config: TrainConfig | None = None, run_dir=None, callbacks=(), **overrides) -> RunResult:
    """Train the run ``config`` describes; resume it if its run directory holds an unfinished
    run with the same settings; report it if that run is finished.

    Args:
        config: a :class:`~re2_tf.config.TrainConfig` (default: ``TrainConfig()``).
        run_dir: run directory (default: ``config.run_dir``, else
            ``checkpoints/<dataset>-<model>``).
        callbacks: more ``keras.callbacks.Callback`` objects for the training loop, called
            after the release routine's and the backup's (e.g.
            :class:`re2_lab.throughput.UpdateTimer`); their ``model`` is the
            :class:`~re2_tf.training.MatchingTrainer` (``model.network`` the network).
        **overrides: fields replaced in ``config`` first (``fit(config, seed=2)``).

    With ``config.distribution`` ``mirrored`` or ``multi_worker`` the run trains under that
    ``tf.distribute`` strategy (``docs/distributed.md``): in a multi-worker run every worker
    makes this same call (``TF_CONFIG`` names the cluster), the chief writes ``run_dir``, and
    another worker's result carries the shared decisions (best update and score, stop
    reason) but no ``scores`` and no ``best_model``.

    Returns:
        :class:`RunResult`. With ``config.repeats = N > 1``, seeds ``seed .. seed+N-1`` are
        trained in ``<run_dir>/seed<k>/``, and ``<run_dir>`` gets ``results.md`` and a
        ``results.json`` with their mean ± std; the result's ``seeds`` and ``summary`` hold
        them.

    Raises:
        ConfigError: an invalid setting, a missing data or embeddings file, an unwritable
            run directory, or a run directory holding a run with other settings; nothing
            is written when it is raised.
        ValueError: a malformed data line (``<file>:<line>: <reason>``).
        WorkerLostError: a multi-worker run lost a worker (killed, preempted, unreachable);
            raised on every surviving worker, naming the lost task. Restarting every worker
            with the same command resumes the run from the chief's last backup.
    """
    started = time.perf_counter()
    config = TrainConfig() if config is None else config
    if overrides:
        config = config.replace(**overrides)
    run_dir = Path(run_dir) if run_dir is not None else config.resolved_run_dir
    if config.repeats <= 1:
        return _train_one(config, run_dir, callbacks)
    seeds = tuple(
        _train_one(
            config.replace(seed=config.seed + k, repeats=1),
            run_dir / f"seed{config.seed + k}",
            callbacks,
        )
        for k in range(config.repeats)
    )
    all_results = [json.loads((s.run_dir / runs.RESULTS_FILE).read_text()) for s in seeds]
    table, summary = runs.summarize_results(all_results)
    (run_dir / "results.md").write_text(table + "\n")
    (run_dir / runs.RESULTS_FILE).write_text(json.dumps(summary, indent=2) + "\n")
    logging.getLogger(TRAIN_LOGGER).info(f"{config.repeats} seeds ({run_dir}):\n{table}")
    return RunResult(
        run_dir=run_dir,
        config=config,
        metric=seeds[0].metric,
        best_score=None,
        best_step=0,
        scores={},
        stop_reason="",
        wall_time=time.perf_counter() - started,
        best_model=None,
        seeds=seeds,
        summary=summary,
    )
