from ragqual.cli.main import run

run()
