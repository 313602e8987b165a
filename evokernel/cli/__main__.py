from evokernel.cli import main

main()
