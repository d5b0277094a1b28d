"""``python -m bench.lease_renewals`` compares like with like: both ways renew every lease it
took, every round, and the database it made for that is gone afterwards."""

from __future__ import annotations

import pytest

from bench.cluster import database_exists, throwaway_database_name
from bench.lease_renewals import WAYS, measure
from tests.databases import ADMIN_URLS, HOW_TO_START


@pytest.fixture(scope="module")
def admin_url() -> str:
    failures = []
    for url in ADMIN_URLS:
        try:
            database_exists(url, "postgres")
        except Exception as error:  # any failure to reach or use the server: the next one
            failures.append(str(error).splitlines()[0])
            continue
        return url
    pytest.skip(f"needs PostgreSQL ({'; '.join(failures)}): {HOW_TO_START}")


def test_both_ways_renew_every_lease_and_the_database_is_dropped(admin_url: str) -> None:
    name = throwaway_database_name()
    figures = measure(admin_url, counts=[3, 7], rounds=2, repeats=1, name=name)
    assert [(figure.leases, figure.way, figure.renewed) for figure in figures] == [
        (count, way, count) for count in (3, 7) for way in WAYS
    ]
    assert all(figure.cpu_ms > 0 and figure.wall_ms > 0 for figure in figures)
    assert not database_exists(admin_url, name)
