from ragqual.cli.main import main

main()
