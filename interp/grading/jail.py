"""Run inside the sandbox's namespaces (a script, not imported): the filesystem made read-only but for the
sandbox folder, the limits set, then the answer run in a nested user namespace that cannot undo either.

Invoked by `interp.grading.sandbox` as `unshare --user --map-root-user --mount --net --ipc --uts --pid --fork
--kill-child --mount-proc -- python -I -S jail.py FOLDER CPU_S MEMORY_BYTES PROCESSES FILE_BYTES UNSHARE`.
It is root only inside its own user namespace (the caller's uid outside), so it can remount what the caller
could already write, never more. Standard library only: the interpreter runs isolated (-I -S).

Steps:
1. this PID namespace's pid_max to its least (301: about 300 processes) where the kernel has one per
   namespace (Linux >= 6.14): uid 0 on the host is exempt from RLIMIT_NPROC, not from pid_max;
2. bind-mount FOLDER onto itself (it stays writable); a fresh /dev (a small tmpfs holding null, zero, full,
   random and urandom bound from the host's); read-only binds over /proc/sys, /proc/sysrq-trigger,
   /proc/irq, /proc/bus, /proc/fs, /proc/scsi and /proc/acpi (as container runtimes do: where the caller is root on the
   host, the namespace's root is uid 0 to the kernel's permission checks, and these files write to the host); then
   every mount but FOLDER, /proc and devpts/mqueue remounted read-only (sysfs and cgroups included; bind
   remounts keep each mount's nosuid/nodev/noexec/atime flags, which a user namespace may not drop);
3. RLIMIT_CPU, RLIMIT_AS, RLIMIT_NPROC, RLIMIT_FSIZE and no core files;
4. run the answer in a nested user namespace: mounts copied into a less privileged namespace are locked,
   so the answer (root there) cannot remount them writable or unmount the read-only layer;
5. when the program ends, count the processes it left in the namespace: any left is exit code 122 and the
   line "left N processes running" (the kernel kills them all when this process, PID 1, exits).
Exit code 121 means the set-up failed (the caller records it, never runs the answer unconfined).
"""

import ctypes
import os
import resource
import sys

SETUP_FAILED = 121
LEFT_RUNNING = 122  # the program exited and left processes running
PID_MAX = 301  # the kernel's least pid_max
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_NOATIME, MS_NODIRATIME, MS_BIND = 32, 1024, 2048, 4096
MS_MOVE, MS_RELATIME, MS_STRICTATIME = 8192, 1 << 21, 1 << 24
OPTION_FLAGS = {
    "nosuid": MS_NOSUID,
    "nodev": MS_NODEV,
    "noexec": MS_NOEXEC,
    "noatime": MS_NOATIME,
    "nodiratime": MS_NODIRATIME,
    "relatime": MS_RELATIME,
    "strictatime": MS_STRICTATIME,
}
LEFT_AS_IS = {
    "devpts",
    "mqueue",
    "nsfs",
}  # and /proc itself: the program's own PID namespace, needed writable for uid maps
PROC_READ_ONLY = ("/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs", "/proc/scsi", "/proc/acpi")
DEVICES = ("null", "zero", "full", "random", "urandom")


def _mount(libc, source, target, flags, fstype=None, data=None):
    if libc.mount(source, target.encode(), fstype, flags, data) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, os.strerror(errno), target)


def _unescape(field):
    return field.replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n").replace("\\134", "\\")


def _mounts():
    """(mount point, flags to keep, filesystem type) of every mount, from /proc/self/mountinfo."""
    with open("/proc/self/mountinfo") as handle:
        for line in handle:
            head, _, tail = line.partition(" - ")
            fields = head.split()
            flags = 0
            for option in fields[5].split(","):
                flags |= OPTION_FLAGS.get(option, 0)
            yield _unescape(fields[4]), flags, tail.split()[0]


def _fresh_dev(libc, folder):
    """A tmpfs with the harmless device nodes, moved over /dev (staged in FOLDER, which it leaves)."""
    staging = os.path.join(folder, ".dev")
    os.mkdir(staging)
    _mount(libc, b"tmpfs", staging, MS_NOSUID | MS_NOEXEC, b"tmpfs", b"mode=755,size=64k")
    for name in DEVICES:
        node = os.path.join(staging, name)
        open(node, "w").close()
        _mount(libc, f"/dev/{name}".encode(), node, MS_BIND)
    _mount(libc, staging.encode(), "/dev", MS_MOVE)
    os.rmdir(staging)


def confine(folder):
    libc = ctypes.CDLL(None, use_errno=True)
    _mount(libc, folder.encode(), folder, MS_BIND)
    _fresh_dev(libc, folder)
    for path in PROC_READ_ONLY:
        if os.path.exists(path):
            _mount(libc, path.encode(), path, MS_BIND)
    for point, flags, fstype in list(_mounts()):
        if point in (folder, "/proc") or fstype in LEFT_AS_IS:
            continue
        try:
            _mount(libc, None, point, MS_REMOUNT | MS_BIND | MS_RDONLY | flags)
        except OSError as exc:
            if exc.errno != 2:  # a mount point hidden under another mount (its path is gone): not reachable
                raise


def _cap_pids(count):
    try:
        with open("/proc/sys/kernel/pid_max", "w") as handle:
            handle.write(str(count))
    except OSError:  # an older kernel: pid_max is global, RLIMIT_NPROC alone bounds the processes
        pass


def _running_others():
    """Processes of this PID namespace still running besides this one (exited orphans are reaped first)."""
    while True:
        try:
            if os.waitpid(-1, os.WNOHANG)[0] == 0:
                break
        except ChildProcessError:
            break
    return sum(1 for name in os.listdir("/proc") if name.isdigit() and int(name) != os.getpid())


def main():
    folder, cpu_s, memory, processes, file_bytes, unshare = sys.argv[1:7]
    try:
        _cap_pids(PID_MAX)  # before /proc/sys is read-only
        confine(folder)
        os.chdir(folder)
        resource.setrlimit(resource.RLIMIT_CPU, (int(cpu_s), int(cpu_s) + 1))  # SIGXCPU at the soft limit
        resource.setrlimit(resource.RLIMIT_AS, (int(memory), int(memory)))
        resource.setrlimit(resource.RLIMIT_NPROC, (int(processes), int(processes)))
        resource.setrlimit(resource.RLIMIT_FSIZE, (int(file_bytes), int(file_bytes)))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    except Exception as exc:  # noqa: BLE001 - any failure to confine means the answer must not run
        sys.stderr.write(f"sandbox set-up failed: {exc}\n")
        sys.exit(SETUP_FAILED)
    # PID 1 of the namespace waits for the program (PID 2): a signal that kills the program (SIGXCPU, SIGXFSZ)
    # comes back as an exit status 128 + N and a line on stderr, as a shell reports it
    status = os.waitpid(
        os.spawnv(
            os.P_NOWAIT,
            unshare,
            [unshare, "--user", "--map-root-user", "--", sys.executable, "-I", "-S", "solution.py"],
        ),
        0,
    )[1]
    left = _running_others()
    if left:  # the kernel kills them when this process (PID 1) exits; the answer is not correct for leaving them
        sys.stderr.write(f"left {left} process{'es' if left > 1 else ''} running\n")
        sys.exit(LEFT_RUNNING)
    if os.WIFSIGNALED(status):
        sys.stderr.write(f"killed by signal {os.WTERMSIG(status)}\n")
        sys.exit(128 + os.WTERMSIG(status))
    sys.exit(os.WEXITSTATUS(status))


if __name__ == "__main__":
    main()
