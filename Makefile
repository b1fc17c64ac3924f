# plugpull: `make run` is the main job, `make test` the whole test suite (unit + VM).
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
PLUGPULL := $(VENV)/bin/plugpull
# Everything the host and the guest image need, from Debian 12's archive.
DEB_PACKAGES := qemu-system-x86 qemu-utils linux-image-amd64 xfsprogs e2fsprogs btrfs-progs f2fs-tools \
	fio bonnie++ hdparm dmsetup busybox-static kmod cpio sqlite3 rsync procps python3-venv \
	gcc libc6-dev python3-dev libvirt-daemon-system libvirt-dev pkg-config lvm2 cryptsetup-bin mdadm \
	make binutils flex bison bc perl patch xz-utils libelf-dev libssl-dev dpkg-dev git ccache attr
STAMP := $(VENV)/.installed

.PHONY: debs test-report chromium test-fresh faults-sweep test-stacks test-hosts deps image test test-unit test-all test-vm run cases bench bench-boot bench-crash bench-fidelity bench-upload bench-hunt doctor shell clean

# Debian's packages come first: pip builds libvirt-python from source against libvirt-dev.
deps: debs $(STAMP)

debs:
	@missing=$$(for p in $(DEB_PACKAGES); do \
		dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q 'install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		if [ "$$(id -u)" != 0 ]; then \
			echo "plugpull needs Debian packages; run as root:"; \
			echo "  sudo apt-get update && sudo apt-get install -y --no-install-recommends" $$missing; \
			exit 2; \
		fi; \
		echo "installing:" $$missing; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi

# The virtualenv uses Debian's Python (python3-venv); reinstalled when pyproject.toml changes.
# A failed install removes the venv, so the next run starts over rather than from half of one.
$(STAMP): pyproject.toml | debs
	/usr/bin/python3 -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check -e . || { rm -rf $(VENV); exit 1; }
	touch $(STAMP)

image: deps
	$(PY) -c 'from plugpull.guest.image.build import build_image; i = build_image(); print(i.key, i.initramfs)'

# The unit tests on two workers (about 5 minutes), then the VM tests on two workers, a test file
# to each (about 13; a TCG guest keeps one core busy; the long ones that repeat a path another
# takes are left to test-all: fixtures/opt_in.py's LONG_VM).
test: deps chromium
	$(PY) -m pytest -m "not vm" -p xdist -n 2 -q --junitxml=results/junit-unit.xml
	$(PY) -m pytest -m vm -p xdist -n 2 --dist loadfile --junitxml=results/junit.xml --durations=15

# The HTML report in headless Chromium at 1280 px: no overflow, every link followed, each count
# against the states it lists; the fixture reports, then a small real run's (a minute or two;
# PLUGPULL_REPORT_RESULTS=FILE reads an earlier run's results instead). Installs Chromium first.
test-report: deps chromium
	PLUGPULL_LONG_VM=1 $(PY) -m pytest tests/unit/report/test_report_browser.py

chromium:
	@command -v chromium >/dev/null || { \
		if [ "$$(id -u)" != 0 ]; then \
			echo "the report's browser test needs Chromium; run as root:"; \
			echo "  sudo apt-get update && sudo apt-get install -y --no-install-recommends chromium"; \
			exit 2; \
		fi; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null; }

# A brand-new Debian 12 root, chrooted: `make deps` as a user (refused, exit 2) and as root, then
# the unit tests. Needs root. FRESH_RUN=1 adds make run twice and make test; FRESH_REV=REV tests REV.
test-fresh:
	bash tests/fresh-root.sh

# Under xdist, in an order shuffled by SEED (a new one each run, named in the header; SEED=N
# runs that order again), so that a test that leans on another fails here.
test-unit: deps
	$(PY) -m pytest -m "not vm" -p xdist -n 2 --shuffle $${SEED:-$$RANDOM}

test-vm: deps
	$(PY) -m pytest -m vm

# Every fault kind on ext4 and xfs, and fsync-retry on ext4, xfs and btrfs (a few minutes).
faults-sweep: deps
	PLUGPULL_FAULTS_ALL=1 $(PY) -m pytest -m vm -s tests/vm/test_faults_vm.py

# Barriers through lvm, dm-crypt and md-raid1 on xfs and ext4, 30 states per model (long).
test-stacks: deps
	PLUGPULL_STACK_SUITE=1 $(PY) -m pytest -m vm suites/test_stacks.py

# Crash states checked on two libvirt hosts of this machine, one of them killed mid-run (minutes).
test-hosts: deps
	PLUGPULL_LIBVIRT_HOSTS=1 $(PY) -m pytest -m vm tests/vm/test_libvirt_hosts_vm.py tests/vm/test_libvirt_remote_vm.py

# Every test, the opt-in ones too: each variable of fixtures/opt_in.py's OPT_IN set (long; the
# times measured are in docs/make-targets.md). PLUGPULL_FSTESTS=DIR, a real fstests tree, adds
# the check of the exported fstests tests against its helpers (tests/unit/reproducer/test_fstests.py)
# and their runs by its `./check` in a guest (tests/vm/test_reproducer_fstests_vm.py).
test-all: deps
	PLUGPULL_FAULTS_ALL=1 PLUGPULL_STACK_SUITE=1 PLUGPULL_LIBVIRT_HOSTS=1 PLUGPULL_LIBVIRT_STEPS=1 PLUGPULL_KERNEL_BUILD=1 \
		PLUGPULL_LONG_VM=1 $(PY) -m pytest --junitxml=results/junit-all.xml --durations=15

# suites/reproducers/: each live finding's sh reproducer and fstests test, as `plugpull
# reproducer` writes them (tests/unit/reproducer/test_suite.py checks they are current).
.PHONY: reproducers
reproducers: deps
	$(PY) -m plugpull.reproducer.suite suites/reproducers

# The guest root in which real fstests runs the exported tests: PLUGPULL_FSTESTS=DIR (a fstests
# tree) built inside a Debian 12 root with suites/reproducers/fstests/ in it; prints the cached
# image's path (minutes the first time, as root).
.PHONY: fstests-root
fstests-root: deps
	@test -n "$(PLUGPULL_FSTESTS)" || { echo "fstests-root: set PLUGPULL_FSTESTS=DIR, a fstests tree" >&2; exit 2; }
	$(PY) -m plugpull.reproducer.fstests_root "$(PLUGPULL_FSTESTS)"

# The main job: xfs and ext4, three modes, one metadata and one fsync workload, throughput
# and crash safety per cell. Resumable: cells already in results/run.jsonl are skipped.
RUN_ARGS := --fs xfs,ext4 --mode barrier,nobarrier,nocache --workload tree-extract,fsync-files \
	--param tree-extract.files=2000 --param fsync-files.count=100 --states 32 \
	--results results/run.jsonl

run: deps
	$(PLUGPULL) matrix $(RUN_ARGS)

# Every seed case, scaled by SCALE; CASES_ARGS=--no-crash for the seeds' figures alone. A case with
# results committed in suites/results/ shows them beside the new run's.
cases: deps
	for c in suites/cases/seed-*.toml; do $(PLUGPULL) reproduce --scale $${SCALE:-0.1} $${CASES_ARGS} $$c || exit $$?; done

bench: bench-boot bench-crash bench-fidelity

bench-boot: deps
	$(PY) bench/boot.py

bench-crash: deps
	$(PY) bench/crash_states.py

# Writes in flight across a flush on the default workloads; exits 1 if any crossed one.
bench-fidelity: deps
	$(PY) bench/flush_fidelity.py

# Today's hunt path and the new one (--fsck always, --fsck failing) side by side, per filesystem.
bench-hunt: deps
	$(PY) bench/hunt_paths.py

# What each step of a hunt costs: chunks, overlap, one workload a chunk, a crash per workload.
.PHONY: bench-hunt-steps
bench-hunt-steps: deps
	$(PY) bench/hunt.py

# The floor of a state check: mount, pp-tree and unmount of an unchanged image in a hot guest.
.PHONY: bench-floor
bench-floor: deps
	$(PY) bench/floor.py

# Where a hunt's CPU goes per distinct state (recording guest, checker guests, fsck, plugpull),
# and the rate the machine's cores allow at that cost.
.PHONY: bench-hunt-cpu
bench-hunt-cpu: deps
	$(PY) bench/hunt_cpu.py

# What a state costs the checker's QEMU plugged in and out, against copied into a kept disk.
.PHONY: bench-plug-cost
bench-plug-cost: deps
	$(PY) bench/plug_cost.py

# A 512 MiB sparse crash state handed to a checker: hard link + overlay here, or a sparse volume upload.
bench-upload: deps
	$(PY) bench/remote_upload.py

# One hunt sample locally and on a loopback cluster of 1 and 2 workers: rates, bytes and coordinator CPU per workload.
.PHONY: bench-cluster-hunt
bench-cluster-hunt: deps
	$(PY) bench/cluster_hunt.py

doctor: deps
	$(PLUGPULL) doctor

shell: deps
	$(PLUGPULL) shell

clean:
	rm -rf $(VENV) *.egg-info .pytest_cache
