"""What the numbers were measured on: the date, the processor, the threads and the versions of what is compared."""

from __future__ import annotations

import datetime
import importlib.metadata as metadata
import os
import platform
from pathlib import Path

import torch


def processor() -> str:
    """The processor's model name (from /proc/cpuinfo on Linux, where `platform` says little)."""
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def environment(threads: int) -> dict:
    return {
        "date": datetime.date.today().isoformat(),
        "cpu": processor(),
        "cores": os.cpu_count(),
        "threads": threads,
        "python": platform.python_version(),
        "torch": torch.__version__,
        "transformers": version("transformers"),
        "gradio": version("gradio"),
        "plotly": version("plotly"),
    }
