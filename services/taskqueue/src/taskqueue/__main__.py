from taskqueue.cli import main

main()
