"""Cron schedules as neuro-san (croniter) reads them: ``minute hour day month weekday
[second]``, or with ``second_at_beginning`` the seconds first. Each field takes ``*``,
numbers, ``a-b`` ranges, ``/step`` and ``,`` lists; weekday 0 and 7 are Sunday; month and
weekday names (``jan``, ``mon``) work. A day matches when day-of-month or weekday
matches if both are restricted, as in cron."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

_MONTHS = {m: i + 1 for i, m in enumerate("jan feb mar apr may jun jul aug sep oct nov dec".split())}
_DAYS = {d: i for i, d in enumerate("sun mon tue wed thu fri sat".split())}
#: (name, lowest, highest, names)
_FIELDS = {
    "second": (0, 59, {}),
    "minute": (0, 59, {}),
    "hour": (0, 23, {}),
    "day": (1, 31, {}),
    "month": (1, 12, _MONTHS),
    "weekday": (0, 7, _DAYS),
}
#: How far ahead a schedule is searched (a 29 February schedule fires within 8 years).
_HORIZON_DAYS = 8 * 366


class CronError(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class Schedule:
    seconds: tuple[int, ...]
    minutes: tuple[int, ...]
    hours: tuple[int, ...]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]
    days_restricted: bool
    weekdays_restricted: bool

    def next_after(self, moment: datetime) -> datetime:
        """The first fire time strictly after ``moment`` (naive or aware, kept as given)."""
        start = moment.replace(microsecond=0) + timedelta(seconds=1)
        day = start.replace(hour=0, minute=0, second=0)
        for _ in range(_HORIZON_DAYS):
            if self._day_matches(day):
                for hour in self.hours:
                    for minute in self.minutes:
                        for second in self.seconds:
                            candidate = day.replace(hour=hour, minute=minute, second=second)
                            if candidate >= start:
                                return candidate
            day += timedelta(days=1)
        raise CronError("the schedule never fires")

    def _day_matches(self, day: datetime) -> bool:
        if day.month not in self.months:
            return False
        by_day = day.day in self.days
        by_weekday = (day.isoweekday() % 7) in self.weekdays
        if self.days_restricted and self.weekdays_restricted:
            return by_day or by_weekday
        return by_day and by_weekday


def parse_cron(text: str, second_at_beginning: bool = False) -> Schedule:
    """Parse a 5- or 6-field schedule; raises :class:`CronError` with the reason."""
    parts = text.split()
    if len(parts) not in (5, 6):
        raise CronError(f"a cron schedule has 5 or 6 fields, not {len(parts)}: {text!r}")
    if len(parts) == 5:
        parts = ["0", *parts] if second_at_beginning else [*parts, "0"]
    if second_at_beginning:
        second, minute, hour, day, month, weekday = parts
    else:
        minute, hour, day, month, weekday, second = parts
    weekdays = {7 if d == 7 else d for d in _field(weekday, "weekday")}
    if 7 in weekdays:
        weekdays = (weekdays - {7}) | {0}
    schedule = Schedule(
        seconds=tuple(sorted(_field(second, "second"))),
        minutes=tuple(sorted(_field(minute, "minute"))),
        hours=tuple(sorted(_field(hour, "hour"))),
        days=frozenset(_field(day, "day")),
        months=frozenset(_field(month, "month")),
        weekdays=frozenset(weekdays),
        days_restricted=day != "*",
        weekdays_restricted=weekday != "*",
    )
    schedule.next_after(datetime(2000, 1, 1))  # a schedule that can never fire is an error now
    return schedule


def _value(token: str, field: str) -> int:
    low, high, names = _FIELDS[field]
    value = names.get(token.lower()) if names else None
    if value is None:
        if not token.isdigit():
            raise CronError(f"bad {field} value {token!r}")
        value = int(token)
    if not low <= value <= high:
        raise CronError(f"{field} {value} is outside {low}-{high}")
    return value


def _field(text: str, field: str) -> set[int]:
    low, high, _ = _FIELDS[field]
    values: set[int] = set()
    for item in text.split(","):
        spec, _, step_text = item.partition("/")
        step = 1
        if step_text:
            if not step_text.isdigit() or int(step_text) == 0:
                raise CronError(f"bad {field} step {step_text!r}")
            step = int(step_text)
        if spec == "*":
            first, last = low, high if field != "weekday" else 6
        elif "-" in spec:
            a, _, b = spec.partition("-")
            first, last = _value(a, field), _value(b, field)
            if first > last:
                raise CronError(f"bad {field} range {spec!r}")
        else:
            first = _value(spec, field)
            last = high if step_text else first
        values.update(range(first, last + 1, step))
    return values
