"""The one error the tools raise on purpose."""


class ToolInputError(ValueError):
    """A request the session cannot serve (unknown task, bad id, empty source): the message says why."""
