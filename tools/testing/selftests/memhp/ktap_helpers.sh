#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# KTAP output for shell selftests (Documentation/dev-tools/ktap.rst).
# Linux 6.1 has no kselftest/ktap_helpers.sh, so this is our own small
# implementation of the same names. Source it, then:
#
#   ktap_print_header; ktap_set_plan 3
#   ktap_test_pass "name"; ktap_test_fail "name"; ktap_test_skip "name" "why"
#   ktap_test_result "name" cmd args...   (pass if the command succeeds)
#   ktap_finished                          (totals line, exit 0/1/4)

KSFT_PASS=0
KSFT_FAIL=1
KSFT_SKIP=4

KTAP_TESTNUM=0
KTAP_CNT_PASS=0
KTAP_CNT_FAIL=0
KTAP_CNT_SKIP=0
KTAP_CNT_XFAIL=0
KTAP_PLAN=0

ktap_print_header()
{
	echo "TAP version 13"
}

ktap_set_plan()
{
	KTAP_PLAN=$1
	echo "1..$1"
}

ktap_print_msg()
{
	echo "# $*"
}

ktap_test_pass()
{
	KTAP_TESTNUM=$((KTAP_TESTNUM + 1))
	KTAP_CNT_PASS=$((KTAP_CNT_PASS + 1))
	echo "ok $KTAP_TESTNUM $1"
}

ktap_test_fail()
{
	KTAP_TESTNUM=$((KTAP_TESTNUM + 1))
	KTAP_CNT_FAIL=$((KTAP_CNT_FAIL + 1))
	echo "not ok $KTAP_TESTNUM $1"
}

# ktap_test_skip NAME REASON
ktap_test_skip()
{
	KTAP_TESTNUM=$((KTAP_TESTNUM + 1))
	KTAP_CNT_SKIP=$((KTAP_CNT_SKIP + 1))
	echo "ok $KTAP_TESTNUM $1 # SKIP $2"
}

# ktap_test_xfail NAME REASON: a known, documented failure (counted apart,
# never as a pass): the check ran and failed for a reason already on record.
ktap_test_xfail()
{
	KTAP_TESTNUM=$((KTAP_TESTNUM + 1))
	KTAP_CNT_XFAIL=$((KTAP_CNT_XFAIL + 1))
	echo "ok $KTAP_TESTNUM $1 # XFAIL $2"
}

# ktap_test_result NAME CMD...: runs CMD, reports pass or fail.
ktap_test_result()
{
	local name=$1

	shift
	if "$@"; then
		ktap_test_pass "$name"
	else
		ktap_test_fail "$name"
	fi
}

# Stop the whole script: remaining planned tests are not run.
ktap_exit_fail_msg()
{
	echo "Bail out! $*"
	ktap_print_totals
	exit $KSFT_FAIL
}

ktap_print_totals()
{
	echo "# Totals: pass:$KTAP_CNT_PASS fail:$KTAP_CNT_FAIL xfail:$KTAP_CNT_XFAIL xpass:0 skip:$KTAP_CNT_SKIP error:0"
}

ktap_finished()
{
	ktap_print_totals
	if [ "$KTAP_PLAN" -gt 0 ] && [ "$KTAP_TESTNUM" -ne "$KTAP_PLAN" ]; then
		echo "# planned $KTAP_PLAN tests, ran $KTAP_TESTNUM"
		exit $KSFT_FAIL
	fi
	if [ "$KTAP_CNT_FAIL" -gt 0 ]; then
		exit $KSFT_FAIL
	elif [ "$KTAP_CNT_PASS" -eq 0 ] && [ "$KTAP_CNT_SKIP" -gt 0 ]; then
		exit $KSFT_SKIP
	fi
	exit $KSFT_PASS
}
