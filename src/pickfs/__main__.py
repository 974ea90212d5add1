from pickfs.cli.main import main

main()
