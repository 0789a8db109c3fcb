"""Where a run's processes work: the process group `torchrun` starts, each process's device and CPU threads.

A run started with plain `python` is one process: every helper here is then a no-op (rank 0 of a world of 1).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import torch
import torch.distributed as dist


def world() -> tuple[int, int]:
    """(rank, world size)."""
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def is_main_process() -> bool:
    return world()[0] == 0


def barrier() -> None:
    if world()[1] > 1:
        dist.barrier()


def setup_device() -> torch.device:
    """Join the process group when started by torchrun; pick CUDA when there is one."""
    if "WORLD_SIZE" in os.environ and int(os.environ["WORLD_SIZE"]) > 1 and not dist.is_initialized():
        dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    if torch.cuda.is_available():
        local = int(os.environ.get("LOCAL_RANK", 0))
        torch.cuda.set_device(local)
        return torch.device("cuda", local)
    return torch.device("cpu")


def leave_process_group() -> None:
    """The end of a distributed run: leave the process group that `setup_device` joined."""
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


def cpu_threads(environ: Mapping[str, str]) -> int:
    """Threads for this process: OMP_NUM_THREADS when set (two runs side by side, one thread each), else the
    cores shared among the processes of a distributed run."""
    if environ.get("OMP_NUM_THREADS", "").isdigit() and int(environ["OMP_NUM_THREADS"]) > 0:
        return int(environ["OMP_NUM_THREADS"])
    return max(1, (os.cpu_count() or 1) // int(environ.get("WORLD_SIZE", 1)))
