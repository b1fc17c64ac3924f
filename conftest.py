pytest_plugins = ["fixtures.plugin"]
