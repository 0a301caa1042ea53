from cortexkit.cli.main import main

main()
