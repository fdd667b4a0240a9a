"""Spark's own error conditions, for the failures Spark's file sources have one for.

A Python data source cannot hand Spark an error condition of its own: PySpark
4.3 passes the errors of its planner and of its readers on as text (a
``PythonException`` holding the traceback). So such an error is both the
openbinlog error (``BinlogError``, with its path) and a ``PySparkException``
whose message is Spark's, ``[CONDITION] ... SQLSTATE: ...``, followed by the
openbinlog error class (``[io_error]``, what callers parse): a user reads the
condition the JVM source and Spark's file sources raise, and code that
catches either kind of error catches it.
"""

from __future__ import annotations

from typing import ClassVar

from pyspark.errors import PySparkException


class SparkCondition(PySparkException):
    """Mixed into a ``BinlogError`` subclass (after it): ``CONDITION``, with ``SQLSTATE``, ``TEXT`` as Spark's
    message of it (``{name}``: a parameter)."""

    CONDITION: ClassVar[str]
    SQLSTATE: ClassVar[str]
    TEXT: ClassVar[str]

    def _as_condition(self, error_class: str, **parameters: str) -> None:
        self._errorClass = self.CONDITION
        self._messageParameters = parameters
        self._contexts = []
        self._message = f"{self.TEXT.format(**parameters)} SQLSTATE: {self.SQLSTATE} [{error_class}]"
        self.args = (str(self),)

    def getSqlState(self) -> str:
        return self.SQLSTATE
