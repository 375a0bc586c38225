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
- **A lost worker ends the run on every survivor with one error**
  (:func:`reporting_lost_workers`): :class:`re2_tf.errors.WorkerLostError`, naming the lost
  task from TensorFlow's error and ``TF_CONFIG``; every worker restarted with the same command
  resumes from the chief's last backup.

Reference: TensorFlow's "Multi-worker training with Keras" and ``tf.distribute`` guides
(``TF_CONFIG``, chief = task 0 of ``worker`` when there is no ``chief`` task).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
from pathlib import Path

import tensorflow as tf

from re2_tf.errors import ConfigError, WorkerLostError

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


#: A task as TensorFlow names it: ``/job:worker/replica:0/task:1`` or ``/job:worker/task:1``.
_TASK_NAME = re.compile(r"/job:(\w+)(?:/replica:\d+)?/task:(\d+)")
#: The collective TensorFlow aborted because a peer failed (the message of any ``OpError``).
_ABORTED_COLLECTIVE = "Collective ops is aborted by"


def lost_tasks(message: str, cluster: dict) -> list:
    """The tasks of ``cluster`` that TensorFlow's error ``message`` says were lost.

    Read in this order, the first that names a task of the cluster other than this process's
    own wins: the coordination service's list of tasks that stopped sending heartbeats (what a
    survivor that hosts the service reports); the remote target of a failed gRPC call (``from
    remote target /job:worker/replica:0/task:0``); an address of the cluster
    (``127.0.0.1:2223``, as ``TF_CONFIG`` spells it); any task name. With no task named and
    exactly one other task in the cluster, that one (the only peer there is to lose).

    Args:
        message: the text of a ``tf.errors.OpError``.
        cluster: ``TF_CONFIG`` as a dict (:func:`tf_config`).

    Returns:
        list of ``(task_type, task_index, address)`` (int index, ``str`` address), in the
        cluster's order; empty when the message names no task and the cluster has more than
        one other task.
    """
    jobs = cluster.get("cluster", {})
    own = (cluster.get("task", {}).get("type"), int(cluster.get("task", {}).get("index", -1)))
    others = [
        (job, index, address)
        for job, addresses in jobs.items()
        for index, address in enumerate(addresses)
        if (job, index) != own
    ]

    def named(text):
        names = {(job, int(index)) for job, index in _TASK_NAME.findall(text)}
        return [task for task in others if task[:2] in names]

    unhealthy = re.search(r"unhealthy(.*?)(?:The tasks have|$)", message, re.S)
    remote = re.findall(r"remote target (\S+)", message)
    for found in (
        named(unhealthy.group(1)) if unhealthy else [],
        named(" ".join(remote)),
        [task for task in others if re.search(rf"(?<![\w.-]){re.escape(task[2])}(?!\d)", message)],
        named(message),
    ):
        if found:
            return found
    return others if len(others) == 1 else []


def worker_lost_error(error, cluster: dict, backup_dir) -> WorkerLostError | None:
    """The :class:`~re2_tf.errors.WorkerLostError` for TensorFlow's ``error`` on a survivor of a
    multi-worker run, or ``None`` when ``error`` is not a lost peer.

    A lost peer is a ``tf.errors.UnavailableError`` (the coordination service's missing
    heartbeats, a connection reset or refused) or any ``tf.errors.OpError`` whose message says
    the collective was aborted by a failure elsewhere. The message names the lost task
    (:func:`lost_tasks`) and says to restart every worker with the same command, which resumes
    from ``backup_dir`` if it exists (else starts the run again).

    Args:
        error: the exception a collective raised.
        cluster: ``TF_CONFIG`` as a dict (:func:`tf_config`).
        backup_dir: ``pathlib.Path``, the chief's backup directory of the run.
    """
    if not isinstance(error, tf.errors.OpError) or not (
        isinstance(error, tf.errors.UnavailableError) or _ABORTED_COLLECTIVE in error.message
    ):
        return None
    tasks = lost_tasks(error.message, cluster)
    which = (
        ", ".join(f"{job} task {index} ({address})" for job, index, address in tasks)
        or "a task of the cluster"
    )
    resume = (
        f"resume from the run's last backup ({backup_dir})"
        if Path(backup_dir).exists()
        else "start the run again (no backup written yet)"
    )
    return WorkerLostError(
        f"lost {which} during training: restart every worker with the same command to {resume}",
        tasks,
    )


@contextlib.contextmanager
def reporting_lost_workers(backup_dir):
    """Within the block, a TensorFlow error that means a peer of this multi-worker run was
    lost is raised as :class:`~re2_tf.errors.WorkerLostError` (:func:`worker_lost_error`),
    chained to TensorFlow's error; every other exception passes unchanged.

    Args:
        backup_dir: ``pathlib.Path``, the chief's backup directory of the run (named in the
            message when it exists).

    Raises:
        WorkerLostError: a collective failed because a worker is gone.
    """
    try:
        yield
    except tf.errors.OpError as error:
        lost = worker_lost_error(error, tf_config(), backup_dir)
        if lost is None:
            raise
        raise lost from error
