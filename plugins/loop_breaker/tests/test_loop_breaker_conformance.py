"""The host's conformance suite run against loop-breaker: one test per check."""

from __future__ import annotations

from framework.testing import conformance_tests

import loop_breaker

test_loop_breaker_conformance = conformance_tests(loop_breaker)
