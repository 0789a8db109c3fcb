"""Debian packages: download, unpack, their versions and the licence files to ship with the corpus."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterable
from pathlib import Path

COMMON_LICENCES_DIR = Path("/usr/share/common-licenses")
COMMON_LICENCES = ("GPL-2", "GPL-3", "MPL-2.0")  # cited, not included, by the copyright files


def run(command: list[str], hint: str = "", **kwargs) -> str:
    """Run a command; its stdout, or a RuntimeError that shows its stderr."""
    if shutil.which(command[0]) is None:
        raise RuntimeError(f"`{command[0]}` not found: building the corpus needs a Debian system (apt-get, dpkg-deb)")
    result = subprocess.run(command, capture_output=True, text=True, **kwargs)
    if result.returncode != 0:
        raise RuntimeError(f"`{' '.join(command)}` failed{hint}:\n{result.stderr.strip()}")
    return result.stdout


def download_packages(folder: Path, packages: Iterable[str]) -> None:
    """`apt-get download` each package into `folder` (run `apt-get update` first on a fresh system)."""
    folder.mkdir(parents=True, exist_ok=True)
    run(["apt-get", "download", *packages], hint=" (run `apt-get update` first?)", cwd=folder)


def find_debs(folder: Path, packages: Iterable[str]) -> dict[str, Path]:
    """{package: its .deb file in `folder`} (the last by name when there are several); an error if one is missing."""
    debs = {}
    for package in packages:
        matches = sorted(folder.glob(f"{package}_*.deb"))
        if not matches:
            raise FileNotFoundError(f"no {package}_*.deb in {folder}")
        debs[package] = matches[-1]
    return debs


def deb_version(deb: Path) -> str:
    """The package version recorded in a .deb (`dpkg-deb -f`)."""
    return run(["dpkg-deb", "-f", str(deb), "Version"]).strip()


def extract_debs(debs: dict[str, Path], folder: Path) -> None:
    """`dpkg-deb -x` each package into `folder/<package>`."""
    for package, deb in debs.items():
        (folder / package).mkdir(parents=True, exist_ok=True)
        run(["dpkg-deb", "-x", str(deb), str(folder / package)])


def licence_files(extracted: Path, packages: Iterable[str]) -> dict[str, Path]:
    """{file name in licenses/: source}: each package's copyright file and the common licence texts they cite."""
    files = {
        f"{package}.copyright": extracted / package / "usr/share/doc" / package / "copyright" for package in packages
    }
    for name in COMMON_LICENCES:
        files[name] = COMMON_LICENCES_DIR / name
        if not files[name].is_file():
            raise FileNotFoundError(f"{files[name]} is missing (Debian's base-files package ships it)")
    cited = {  # the others the copyright files point to ("see /usr/share/common-licenses/LGPL-2.1.")
        name.rstrip(".")
        for path in list(files.values())
        if path.name == "copyright" and path.is_file()
        for name in re.findall(r"common-licenses/([\w.+-]+)", path.read_text(encoding="utf-8", errors="replace"))
    }
    for name in sorted(cited - set(files)):
        if (COMMON_LICENCES_DIR / name).is_file():
            files[name] = COMMON_LICENCES_DIR / name
    return files
