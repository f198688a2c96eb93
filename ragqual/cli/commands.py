"""Every top-level command, in the order `ragqual --help` lists them."""

from ragqual.cli.db_cmd import db_group
from ragqual.cli.history_cmd import history_cmd

ALL = [db_group, history_cmd]
