from rigbench.cli import main

main()
