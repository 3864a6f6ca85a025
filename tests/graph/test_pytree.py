"""graph/pytree.py: how em.jit splits its arguments into tensor leaves and a static
structure (the part of the cache key that is not a tensor), and puts them back together.
Expected structures and paths are written out by hand."""

from __future__ import annotations

from collections import namedtuple

import numpy as np
import pytest

import execmode as em
from execmode.graph.pytree import LEAF, flatten, leaf_paths, static_paths, unflatten

Point = namedtuple("Point", "x y")


def test_a_tensor_is_one_leaf():
    t = em.ones(2)
    leaves, structure = flatten(t)
    assert structure == LEAF and leaves == [t]
    assert unflatten(structure, [t]) is t


def test_leaves_come_in_depth_first_order_and_statics_stay_in_the_structure():
    a, b, c = em.ones(1), em.zeros(1), em.full((1,), 2.0)
    leaves, structure = flatten([a, (b, 3), {"k": c}])
    assert [id(x) for x in leaves] == [id(a), id(b), id(c)]
    assert structure == (
        "list",
        (LEAF, ("tuple", (LEAF, ("static", ("int", 3)))), ("dict", ("k",), (LEAF,))),
    )


def test_dict_keys_are_sorted_so_insertion_order_does_not_change_the_key():
    a, b = em.ones(1), em.zeros(1)
    leaves1, s1 = flatten({"b": b, "a": a})
    leaves2, s2 = flatten({"a": a, "b": b})
    assert s1 == s2 == ("dict", ("a", "b"), (LEAF, LEAF))
    assert leaves1[0] is a and leaves2[0] is a


def test_statics_are_keyed_by_type_as_well_as_value():
    # 1 == 1.0 == True in Python, but a jitted function may branch on the type.
    keys = {flatten(v)[1] for v in (1, 1.0, True)}
    assert keys == {("static", ("int", 1)), ("static", ("float", 1.0)),
                    ("static", ("bool", True))}
    assert len(keys) == 3


def test_a_namedtuple_keeps_its_type_in_the_structure():
    t = em.ones(1)
    _, structure = flatten(Point(t, 2))
    assert structure == ("namedtuple", Point, (LEAF, ("static", ("int", 2))))
    # A plain tuple of the same contents is another structure.
    assert flatten((t, 2))[1] != structure


def test_unflatten_rebuilds_the_same_containers_with_new_leaves():
    a, b, c = em.ones(1), em.zeros(1), em.full((1,), 2.0)
    _, structure = flatten({"p": Point(a, "s"), "q": [b, (c, None)]})
    x, y, z = em.full((1,), 7.0), em.full((1,), 8.0), em.full((1,), 9.0)
    rebuilt = unflatten(structure, [x, y, z])
    assert type(rebuilt["p"]) is Point
    assert rebuilt["p"].x is x and rebuilt["p"].y == "s"
    assert isinstance(rebuilt["q"], list) and isinstance(rebuilt["q"][1], tuple)
    assert rebuilt["q"][0] is y and rebuilt["q"][1][0] is z and rebuilt["q"][1][1] is None


def test_empty_containers_are_structure_without_leaves():
    leaves, structure = flatten(([], (), {}))
    assert leaves == []
    assert structure == ("tuple", (("list", ()), ("tuple", ()), ("dict", (), ())))
    assert unflatten(structure, []) == ([], (), {})


def test_leaf_and_static_paths_name_each_position():
    a, b, c = em.ones(1), em.zeros(1), em.full((1,), 2.0)
    _, structure = flatten(([a, b, 0.5], {"w": c, "n": 4}, Point(a, "tag")))
    # Dict keys in sorted order ("n" before "w"); the namedtuple by field name.
    assert leaf_paths(structure) == ["[0][0]", "[0][1]", "[1]['w']", "[2].x"]
    assert static_paths(structure) == [("[0][2]", 0.5), ("[1]['n']", 4), ("[2].y", "tag")]


def test_an_unhashable_static_is_refused_with_what_to_pass_instead():
    with pytest.raises(TypeError, match="neither a tensor, a list/tuple/dict of them, "
                                        "nor hashable"):
        flatten([em.ones(1), bytearray(b"x")])  # mutable, so unhashable


def test_namedtuple_arguments_are_pytree_nodes():
    Batch = namedtuple("Batch", "x y")
    f = em.jit(lambda b: b.x + b.y)
    for k in (1.0, 2.0, 3.0):
        out = f(Batch(em.full((3,), k), em.zeros(3)))
        np.testing.assert_allclose(out.numpy(), [k] * 3)
    assert f.trace_count == 1
