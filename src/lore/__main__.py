from lore.cli import main

main()
