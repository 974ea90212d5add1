from pickfs.stack.processes import descendants


def test_descendants_walks_the_tree_parents_first():
    ppids = {10: 1, 11: 10, 12: 10, 13: 11, 20: 1, 21: 20}
    assert descendants(10, ppids) == [10, 11, 12, 13]
    assert descendants(20, ppids) == [20, 21]
    assert descendants(99, ppids) == [99]  # a root not (or no longer) in the table: itself only
