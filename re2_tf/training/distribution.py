"""Training past one process with ``tf.distribute``: which strategy, which worker, and what
the workers must agree on.

Three settings of ``--distribution`` (TensorFlow's names):

==============  ===========================================  ==================================
setting         strategy                                     replicas
==============  ===========================================  ==================================
``none``        TensorFlow's default strategy                one, this process's devices
``mirrored``    ``tf.distribute.MirroredStrategy``           every local GPU, the devices named
                                                             by ``--devices``, or the
                                                             ``--logical_cpus`` CPU devices
``multi_worker`` ``tf.distribute.MultiWorkerMirroredStrategy`` one per worker of ``TF_CONFIG``
                                                             (times its local GPUs)
==============  ===========================================  ==================================

What is ours (the strategies are TensorFlow's):

- **One update, however many replicas.** ``--batch_size`` is the global batch; each replica
  computes its rows' gradient, weighted by its share of the batch's rows, and
  :class:`re2_tf.training.trainer.MatchingTrainer` sums them across replicas *before* the
  release's global-norm clipping and the non-finite guard (Keras' optimiser would sum them
  only after a per-replica clip). So the update equals one process's update on the whole
  batch, and every replica takes the same skip-or-apply decision.
- **The chief decides.** Evaluation on dev, the best checkpoint, early stopping and the
  learning-rate controller are the chief's: it scores dev and :func:`broadcast_from_chief`
  sends the score to every worker, which then takes the same decisions from the same state
  (so no worker can stop while another waits in an all-reduce).
- **Only the chief writes the run directory** (TensorFlow's multi-worker checkpointing
  convention): other workers write their logs and files to a temporary directory of their
  own and read the chief's backup when a run resumes.

Reference: TensorFlow's "Multi-worker training with Keras" and ``tf.distribute`` guides
(``TF_CONFIG``, chief = task 0 of ``worker`` when there is no ``chief`` task).
"""

from __future__ import annotations

import dataclasses
import json
import os

import tensorflow as tf

from re2_tf.errors import ConfigError

STRATEGIES = ("none", "mirrored", "multi_worker")

_STRATEGY_CACHE: dict = {}
_BROADCASTS: dict = {}


@dataclasses.dataclass(frozen=True)
class Worker:
    """This process's place in a run.

    Attributes:
        task_type: ``"worker"``/``"chief"`` of ``TF_CONFIG``, or ``None`` for one process.
        task_id: int, the task index (0 for one process).
        num_workers: int >= 1, processes taking part.
        is_chief: bool, this process writes the run directory and decides evaluations.
        replicas: int >= 1, replicas in sync across all workers.
    """

    task_type: str | None
    task_id: int
    num_workers: int
    is_chief: bool
    replicas: int


def split_cpu(logical_cpus: int) -> None:
    """Split the host CPU into ``logical_cpus`` logical devices (``/cpu:0`` ... ``/cpu:N-1``)
    for a ``mirrored`` run on a CPU-only host (``tf.config.set_logical_device_configuration``).
    The devices share the same cores; this runs replicas side by side, it adds no compute.

    Raises:
        ConfigError: TensorFlow has already initialised its devices in this process (the
            split must come before the first op: start a fresh process).
    """
    if logical_cpus <= 1:
        return
    cpu = tf.config.list_physical_devices("CPU")[0]
    current = tf.config.get_logical_device_configuration(cpu)
    if current is not None and len(current) == logical_cpus:
        return
    try:
        tf.config.set_logical_device_configuration(
            cpu, [tf.config.LogicalDeviceConfiguration() for _ in range(logical_cpus)]
        )
    except RuntimeError:
        raise ConfigError(
            f"logical_cpus: must be set before TensorFlow initialises its devices; got "
            f"{logical_cpus} after TensorFlow already ran in this process (start a fresh "
            "process)",
            field="logical_cpus",
        ) from None


def tf_config() -> dict:
    """``TF_CONFIG`` as a dict (``{}`` when unset).

    Raises:
        ConfigError: ``TF_CONFIG`` is not JSON or has no ``cluster``/``task``.
    """
    text = os.environ.get("TF_CONFIG", "")
    if not text.strip():
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise ConfigError(
            f"distribution: TF_CONFIG is not JSON: {error}", field="distribution"
        ) from None
    if not isinstance(value, dict) or "cluster" not in value or "task" not in value:
        raise ConfigError(
            'distribution: TF_CONFIG must hold "cluster" and "task" (e.g. {"cluster": {"worker": '
            '["host1:12345", "host2:12345"]}, "task": {"type": "worker", "index": 0}})',
            field="distribution",
        )
    return value


def make_strategy(distribution: str = "none", devices=(), logical_cpus: int = 0):
    """The ``tf.distribute`` strategy of a ``--distribution`` setting (one per process: a
    second call with the same arguments returns the same strategy, as multi-worker collectives
    can be configured only once per process).

    Args:
        distribution: ``none``, ``mirrored`` or ``multi_worker`` (see the module docstring).
        devices: device names for ``mirrored`` (e.g. ``("/gpu:0", "/gpu:1")``); empty: every
            GPU, else the ``logical_cpus`` CPU devices, else the CPU.
        logical_cpus: int >= 0; > 1 splits the CPU first (:func:`split_cpu`).

    Returns:
        ``(strategy, worker)``: a ``tf.distribute.Strategy`` and this process's
        :class:`Worker`.

    Raises:
        ConfigError: unknown setting; ``multi_worker`` without a ``TF_CONFIG`` naming a
            ``worker`` cluster; ``devices`` with a setting other than ``mirrored``; TensorFlow
            already initialised when the CPU split or the multi-worker collectives need to be
            configured.
    """
    if distribution not in STRATEGIES:
        raise ConfigError(
            f"distribution: must be one of {', '.join(STRATEGIES)}, got {distribution!r}",
            field="distribution",
        )
    key = (distribution, tuple(devices), int(logical_cpus))
    if key in _STRATEGY_CACHE:
        return _STRATEGY_CACHE[key]
    split_cpu(logical_cpus)
    cluster = tf_config()
    task_type, task_id, num_workers = None, 0, 1
    if distribution == "none":
        strategy = tf.distribute.get_strategy()
    elif distribution == "mirrored":
        names = list(devices)
        if not names:
            gpus = tf.config.list_logical_devices("GPU")
            cpus = tf.config.list_logical_devices("CPU")
            names = [d.name for d in (gpus or (cpus if logical_cpus > 1 else cpus[:1]))]
        strategy = tf.distribute.MirroredStrategy(devices=names)
    else:
        workers = cluster.get("cluster", {}).get("worker", [])
        chiefs = cluster.get("cluster", {}).get("chief", [])
        if not workers and not chiefs:
            raise ConfigError(
                "distribution: multi_worker needs TF_CONFIG naming the cluster's workers, e.g. "
                '{"cluster": {"worker": ["localhost:12345", "localhost:12346"]}, '
                '"task": {"type": "worker", "index": 0}} (the same cluster on every host, '
                "each with its own task index)",
                field="distribution",
            )
        try:
            strategy = tf.distribute.MultiWorkerMirroredStrategy()
        except (RuntimeError, ValueError) as error:
            raise ConfigError(
                f"distribution: multi_worker could not start: {error} (it must be set up "
                "before TensorFlow runs its first op: start a fresh process)",
                field="distribution",
            ) from None
        task_type = cluster["task"]["type"]
        task_id = int(cluster["task"]["index"])
        num_workers = len(workers) + len(chiefs)
    is_chief = (
        task_type is None
        or task_type == "chief"
        or (task_type == "worker" and task_id == 0 and not cluster["cluster"].get("chief"))
    )
    worker = Worker(task_type, task_id, num_workers, is_chief, strategy.num_replicas_in_sync)
    _STRATEGY_CACHE[key] = (strategy, worker)
    return strategy, worker


def broadcast_from_chief(strategy, value: float) -> float:
    """The chief's ``value`` on every worker (a float; other workers pass any placeholder).

    The first replica of the chief contributes ``value``, every other replica 0, and one
    all-reduce sums them; with one worker this returns ``value`` without communicating. Every
    worker must call it at the same point of the run (it is a collective).
    """
    extended = strategy.extended
    if not getattr(extended, "_in_multi_worker_mode", lambda: False)():
        return float(value)
    reduce = _BROADCASTS.get(id(strategy))
    if reduce is None:  # traced once per strategy, not at every evaluation

        @tf.function
        def reduce(local):
            def contribute():
                context = tf.distribute.get_replica_context()
                first = tf.equal(context.replica_id_in_sync_group, 0)
                share = tf.where(first, local, tf.zeros_like(local))
                return context.all_reduce(tf.distribute.ReduceOp.SUM, share)

            return strategy.experimental_local_results(strategy.run(contribute))[0]

        _BROADCASTS[id(strategy)] = reduce
    return float(reduce(tf.constant(float(value), tf.float64)))
