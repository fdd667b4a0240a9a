"""``python -m openbinlog_conformance run --impl ...``"""

from .cli import conformance_group

conformance_group(prog_name="python -m openbinlog_conformance")
