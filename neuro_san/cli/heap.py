"""The garbage collector's settings for a serving process, applied once start-up is done.

A burst of chats (``make bench``'s S5: 2,000 at once; S7: 10,000) keeps thousands of chats'
objects alive at the same time. CPython's cyclic collector then runs often (every 700 net
allocations in generation 0) and each full collection walks every tracked object, the
~100k that imports and network loading left behind included: in S5's burst it was 10 % of
the event loop's samples (py-spy, ``python -m bench.profile --scenario S5 --native``), paid
on the one loop every chat waits on. Two standard settings remove most of it:

- ``gc.freeze()`` after start-up moves what start-up made (modules, classes, descriptors,
  parsed networks) to a permanent generation that collections no longer walk;
  Frozen objects that later become garbage *in a cycle* (networks replaced by a hot reload)
  are not collected; that is bounded by start-up's heap, paid once, not per reload;
- a generation-0 threshold of 7,000 (10 × CPython's) collects young cycles ten times less
  often. Only garbage *in reference cycles* waits longer; everything else is freed by
  reference counting at once, so memory barely moves (S7's peak RSS was the same).

Measured on 2 cores (docs/performance.md, step three): S5 p99 −13 % (median of 5 runs
each, alternating), S7 p99 −14 %, steady-state CPU per chat unchanged.
"""

from __future__ import annotations

import gc
import logging

log = logging.getLogger(__name__)
#: Generation 0, 1 and 2 thresholds: CPython's (700, 10, 10) with generation 0 ten times
#: larger and the older generations collected half as often.
THRESHOLDS = (7_000, 20, 20)


def settle_heap() -> None:
    """Collect start-up's garbage, freeze what is left and raise the collector's thresholds.
    Call once per process, when the server is about to take traffic."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*THRESHOLDS)
    log.info("garbage collector: %d start-up objects frozen, thresholds %s", gc.get_freeze_count(), THRESHOLDS)
