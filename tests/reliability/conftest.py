"""Print every reliability scenario's counts at the end of the session, so that they show
in a plain ``make test`` run (pytest captures what the tests print)."""
from tests.reliability.ledger import REPORTS


def pytest_terminal_summary(terminalreporter):
    if REPORTS:
        terminalreporter.section("reliability counts")
        for line in REPORTS:
            terminalreporter.write_line(line)
