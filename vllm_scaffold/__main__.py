from vllm_scaffold.cli import main

main()
