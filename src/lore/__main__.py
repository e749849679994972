from lore.entry import main

main()
