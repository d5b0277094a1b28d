"""``argue assets fetch``: keep the pinned htmx files where ``ARGUE_ASSETS=local`` serves
them from (``ARGUE_ASSETS_DIR``, default ``ARGUE_HOME/assets``), fetched from the npm
registry and checked against their hashes. The container image runs it at build time, so a
machine with no internet serves complete pages; ``argue serve`` in ``local`` mode does the
same on its first start.
"""

from __future__ import annotations

import argparse
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "action",
        choices=("fetch",),
        help="fetch: fetch the pinned files not kept yet, check them and keep them",
    )


def run(args: argparse.Namespace) -> int:
    from app import vendored
    from app.config import get_settings

    settings = get_settings()
    folder = vendored.folder_of(settings)
    missing = [s for s in vendored.SCRIPTS if vendored.kept(s, folder) is None]
    try:
        vendored.ensure(folder, registry=settings.assets_registry)
    except vendored.AssetError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    for script in vendored.SCRIPTS:
        how = "fetched and checked" if script in missing else "already kept"
        print(f"{folder / script.local_path}  ({how}, {script.integrity})")
    if settings.assets != "local":
        print("Pages load htmx from its CDN until ARGUE_ASSETS=local is set.")
    return 0
