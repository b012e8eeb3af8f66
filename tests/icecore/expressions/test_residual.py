"""Residuals match Iceberg Java 1.10's ResidualEvaluator (and its TestResidualEvaluator)."""

from __future__ import annotations

import datetime as dt
import random
from typing import Any

from icecore.expressions.model import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BoundPredicate,
    BoundReference,
    Not,
    Operation,
    Or,
)
from icecore.expressions.residual import residual_evaluator
from icecore.partitioning import PartitionField, PartitionSpec
from icecore.schema import Schema
from icecore.transforms import BucketTransform, DayTransform, IdentityTransform, VoidTransform
from icecore.types import IntegerType, LongType, NestedField, TimestampType
from icecore.values import iso_to_micros

Op = Operation

SCHEMA = Schema(
    (
        NestedField(50, "dateint", IntegerType()),
        NestedField(51, "hour", IntegerType()),
        NestedField(52, "ts", TimestampType()),
        NestedField(53, "id", LongType()),
    )
)


def ref(field_id: int) -> BoundReference:
    f = SCHEMA.find_field(field_id)
    assert f is not None
    return BoundReference(f, f.name)


def pred(field_id: int, op: Operation, *values: Any) -> BoundPredicate:
    return BoundPredicate(op, ref(field_id), tuple(values))


def test_identity_transform_residuals_like_java() -> None:
    # TestResidualEvaluator.testIdentityTransformResiduals
    spec = PartitionSpec(0, (PartitionField(50, 1000, "dateint", IdentityTransform()),))
    expr = Or(
        Or(
            And(pred(50, Op.LT, 20170815), pred(50, Op.GT, 20170801)),
            And(pred(50, Op.EQ, 20170815), pred(51, Op.LT, 12)),
        ),
        And(pred(50, Op.EQ, 20170801), pred(51, Op.GT, 11)),
    )
    residuals = residual_evaluator(spec, expr, True)
    assert residuals({1000: 20170815}) == pred(51, Op.LT, 12)
    assert residuals({1000: 20170801}) == pred(51, Op.GT, 11)
    assert residuals({1000: 20170812}) == AlwaysTrue()
    assert residuals({1000: 20170817}) == AlwaysFalse()


def test_with_schema_argument_and_unpartitioned() -> None:
    spec = PartitionSpec(0, (PartitionField(50, 1000, "dateint", IdentityTransform()),))
    expr = pred(50, Op.EQ, 1)
    assert residual_evaluator(spec, SCHEMA, expr, True)({1000: 1}) == AlwaysTrue()
    assert residual_evaluator(PartitionSpec(0, ()), expr, True)({}) is expr
    # A void-only spec still goes through projection (Java checks fields().isEmpty()).
    void = PartitionSpec(0, (PartitionField(50, 1000, "x", VoidTransform()),))
    assert residual_evaluator(void, expr)({1000: None}) == expr


def test_day_residuals_at_boundaries() -> None:
    spec = PartitionSpec(0, (PartitionField(52, 1000, "ts_day", DayTransform()),))
    start = iso_to_micros("2024-08-09T00:00:00")
    residuals = residual_evaluator(spec, pred(52, Op.GT_EQ, start))
    assert residuals({1000: dt.date(2024, 8, 9)}) == AlwaysTrue()  # midnight: whole day
    assert residuals({1000: dt.date(2024, 8, 8)}) == AlwaysFalse()
    mid = residual_evaluator(spec, pred(52, Op.GT_EQ, start + 1))
    assert mid({1000: dt.date(2024, 8, 9)}) == pred(52, Op.GT_EQ, start + 1)
    assert mid({1000: dt.date(2024, 8, 10)}) == AlwaysTrue()
    # Null partition: Java's comparators put null first, so < holds and >= does not.
    assert residuals({1000: None}) == AlwaysFalse()
    assert residual_evaluator(spec, pred(52, Op.LT, start))({1000: None}) == AlwaysTrue()
    # Before the epoch Java's fix widens: ts < 1969-12-31T12:00 on day 1969-12-31
    # (strict < day -1, not true; inclusive <= day 0 after the fix) keeps the predicate.
    early = residual_evaluator(spec, pred(52, Op.LT, iso_to_micros("1969-12-31T12:00:00")))
    assert early({1000: dt.date(1969, 12, 31)}) == pred(
        52, Op.LT, iso_to_micros("1969-12-31T12:00:00")
    )
    assert early({1000: dt.date(1970, 1, 1)}) == pred(
        52, Op.LT, iso_to_micros("1969-12-31T12:00:00")
    )  # kept, not false: the widened inclusive bound
    assert early({1000: dt.date(1970, 1, 2)}) == AlwaysFalse()


def test_not_and_unpartitioned_columns() -> None:
    spec = PartitionSpec(0, (PartitionField(50, 1000, "dateint", IdentityTransform()),))
    expr = And(Not(pred(50, Op.EQ, 5)), pred(53, Op.EQ, 1))
    residuals = residual_evaluator(spec, expr)
    assert residuals({1000: 5}) == AlwaysFalse()
    assert residuals({1000: 6}) == pred(53, Op.EQ, 1)


def test_bucket_residuals() -> None:
    spec = PartitionSpec(0, (PartitionField(53, 1000, "id_bucket", BucketTransform(4)),))
    b = BucketTransform(4).apply(LongType(), 34)
    residuals = residual_evaluator(spec, pred(53, Op.EQ, 34))
    assert residuals({1000: b}) == pred(53, Op.EQ, 34)
    assert residuals({1000: (b + 1) % 4}) == AlwaysFalse()
    not_eq = residual_evaluator(spec, pred(53, Op.NOT_EQ, 34))
    assert not_eq({1000: (b + 1) % 4}) == AlwaysTrue()


def test_peer_pyiceberg_on_generated_cases() -> None:
    """PyIceberg 0.12's ResidualEvaluator agrees with ours on day partitions but near 1970.

    Before the epoch PyIceberg lacks Java's projection fix (Java is followed).
    """
    from pyiceberg.expressions import (
        AlwaysFalse as PFalse,
    )
    from pyiceberg.expressions import (
        AlwaysTrue as PTrue,
    )
    from pyiceberg.expressions import (
        EqualTo,
        GreaterThan,
        GreaterThanOrEqual,
        LessThan,
        LessThanOrEqual,
        NotEqualTo,
    )
    from pyiceberg.expressions.visitors import residual_evaluator_of
    from pyiceberg.partitioning import PartitionField as PF
    from pyiceberg.partitioning import PartitionSpec as PS
    from pyiceberg.schema import Schema as PSchema
    from pyiceberg.transforms import DayTransform as PDay
    from pyiceberg.typedef import Record
    from pyiceberg.types import NestedField as PNF
    from pyiceberg.types import TimestampType as PTs

    peer_ops = {
        Op.LT: LessThan,
        Op.LT_EQ: LessThanOrEqual,
        Op.GT: GreaterThan,
        Op.GT_EQ: GreaterThanOrEqual,
        Op.EQ: EqualTo,
        Op.NOT_EQ: NotEqualTo,
    }
    peer_schema = PSchema(PNF(52, "ts", PTs(), required=False))
    peer_spec = PS(PF(source_id=52, field_id=1000, transform=PDay(), name="ts_day"))
    spec = PartitionSpec(0, (PartitionField(52, 1000, "ts_day", DayTransform()),))
    rng = random.Random(9)
    day = 86_400_000_000
    differences = 0
    for _ in range(2000):
        op = rng.choice(list(peer_ops))
        lit = rng.choice([0, day, -day, 5 * day]) + rng.choice([0, 1, -1, rng.randint(0, day)])
        part_days = lit // day + rng.choice([-1, 0, 1])
        ours = residual_evaluator(spec, pred(52, op, lit))(
            {1000: dt.date(1970, 1, 1) + dt.timedelta(days=part_days)}
        )
        peer = residual_evaluator_of(peer_spec, peer_ops[op]("ts", lit), True, peer_schema)
        theirs = peer.residual_for(Record(part_days))
        if isinstance(theirs, PTrue):
            peer_kind = "true"
        elif isinstance(theirs, PFalse):
            peer_kind = "false"
        else:
            peer_kind = "pred"
        our_kind = {AlwaysTrue: "true", AlwaysFalse: "false"}.get(type(ours), "pred")  # type: ignore[call-overload]
        if our_kind != peer_kind:
            assert part_days <= 0 or (lit - 1) // day <= 0, (op, lit, part_days, ours, theirs)
            differences += 1
    assert differences > 0
