import pytest

# Checks shared by several test modules get pytest's assertion messages too; registered here, in
# the package that is imported before any conftest or test module.
pytest.register_assert_rewrite("tests.realwriter.scenario_checks")
