from envevo.cli.main import main

main()
