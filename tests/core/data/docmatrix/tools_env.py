"""Python tools for the documentation matrix (tests/core/test_documentation_matrix.py): every text
carries a marker `MK_<tool>_<component>[_<argument>]` so a test can say which component shows where."""

from corral_core.tools import tool


@tool
def py_plain(query: str, limit: int = 3) -> str:
    """Find items MK_pyplain_brief. More of the purpose MK_pyplain_detailed.

    A body paragraph MK_pyplain_body that only the docstring's body says.

    Args:
        query: Words MK_pyplain_brief_query. All must match MK_pyplain_detailed_query.
        limit: How many MK_pyplain_brief_limit.

    Returns:
        A list MK_pyplain_returns.
    """
    return query * limit


@tool
def py_tagged(query: str) -> str:
    """[BRIEF] Find tagged items MK_pytagged_brief. [/BRIEF]
    [DETAILED] MK_pytagged_detailed [/DETAILED]
    [PROCEDURAL] MK_pytagged_procedural [/PROCEDURAL]
    [SYNTACTICAL] MK_pytagged_syntactical [/SYNTACTICAL]
    [EXAMPLES] MK_pytagged_examples [/EXAMPLES]

    Args:
        query: [ARGS_BRIEF] MK_pytagged_brief_query [/ARGS_BRIEF]
            [ARGS_DETAILED] MK_pytagged_detailed_query [/ARGS_DETAILED]
    """
    return query
