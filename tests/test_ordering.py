"""The order the parallel suite hands tests out in (tests/support/ordering.py)."""

from __future__ import annotations

from tests.support.ordering import long_tests_first, slice_sizes, weight


def test_slices_are_the_sizes_worksteal_sends() -> None:
    assert slice_sizes(10, 4) == [2, 2, 3, 3]
    assert sum(slice_sizes(2289, 4)) == 2289


def test_the_longest_matching_prefix_sets_a_weight() -> None:
    assert weight("tests/chaos/test_database_long_outage.py::test_x") == 370
    assert weight("tests/chaos/test_browser_kills.py::test_y") == 60
    assert weight("tests/store/test_runs.py::test_z") == 0


def test_long_tests_head_every_slice_and_the_rest_keep_their_order() -> None:
    ids = ([f"tests/actions/test_a.py::t{i}" for i in range(6)]
           + ["tests/chaos/test_database_long_outage.py::t", "tests/chaos/test_b.py::t1",
              "tests/chaos/test_b.py::t2", "tests/durability/test_r.py::t"]
           + [f"tests/store/test_s.py::t{i}" for i in range(10)])
    ordered = long_tests_first(ids, ids, 4)
    assert sorted(ordered) == sorted(ids)
    slices, start = [], 0
    for size in slice_sizes(len(ids), 4):
        slices.append(ordered[start:start + size])
        start += size
    heads = [s[0] for s in slices]
    assert heads[0] == "tests/chaos/test_database_long_outage.py::t"
    assert all(weight(head) > 0 for head in heads), heads  # every worker starts on a long test
    rest = [i for i in ordered if weight(i) == 0]
    assert rest == [i for i in ids if weight(i) == 0]  # everything else in collection order


def test_one_worker_or_no_long_test_keeps_the_collection_order() -> None:
    ids = ["tests/chaos/test_b.py::t", "tests/store/test_s.py::t"]
    assert long_tests_first(ids, ids, 1) == ids
    plain = ["tests/store/test_s.py::t1", "tests/store/test_s.py::t2"]
    assert long_tests_first(plain, plain, 4) == plain
