import signal

pytest_plugins = ["fixtures.plugin", "fixtures.order", "fixtures.opt_in"]

# A shell starts a background job (`make test &`) with SIGINT ignored, and every process it
# starts inherits that; the tests that Ctrl-C a plugpull run would then wait for nothing.
# A handler (unlike SIG_IGN) is reset to the default on exec, so the children get SIGINT back.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
