from fatbin_inspect.cli.main import console_main

if __name__ == "__main__":  # pragma: no cover
    console_main()
