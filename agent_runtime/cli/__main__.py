from agent_runtime.cli import main

main()
