"""Run inside the sandbox's namespaces (a script, not imported): a fresh root that holds only what the
interpreter needs, the limits set, then the answer run in a nested user namespace that cannot undo either.

Invoked by `interp.grading.sandbox` as `unshare --user --map-root-user --mount --net --ipc --uts --pid --fork
--kill-child --mount-proc -- python -I -S jail.py FOLDER CPU_S MEMORY_BYTES PROCESSES FILE_BYTES DISK_BYTES
UNSHARE`. It is root only inside its own user namespace (the caller's uid outside), so it can mount what the
caller could already reach, never more. Standard library only: the interpreter runs isolated (-I -S).

Steps:
1. this PID namespace's pid_max to its least (301: about 300 processes) where the kernel has one per
   namespace (Linux >= 6.14): uid 0 on the host is exempt from RLIMIT_NPROC, not from pid_max;
2. read the files the caller put in FOLDER (the program), then build a new root on a small tmpfs mounted over
   FOLDER: read-only binds of /usr, /bin, /sbin, /lib* (symbolic links where the host has links) and the
   interpreter's own installation (its prefixes), nothing else of the host: no /etc, /home, /root, /tmp, /run,
   /var, /sys, so no host file, secret or socket file is there to open or connect to; this PID namespace's
   /proc with /proc/sys, /proc/sysrq-trigger, /proc/irq, /proc/bus, /proc/fs, /proc/scsi and /proc/acpi bound
   read-only (as container runtimes do: the namespace's root is uid 0 to the kernel's permission checks where
   the caller is root on the host); a fresh /dev (a tmpfs holding null, zero, full, random and urandom bound
   from the host's); /sandbox, a tmpfs of DISK_BYTES (the program's total disk use) holding FOLDER's files;
3. pivot_root into it, the old root detached, then every mount but /sandbox, /proc and devpts/mqueue
   remounted read-only (bind remounts keep each mount's nosuid/nodev/noexec/atime flags, which a user
   namespace may not drop);
4. RLIMIT_CPU, RLIMIT_AS, RLIMIT_NPROC, RLIMIT_FSIZE, RLIMIT_NOFILE (256) and no core files;
5. run the answer in a nested user namespace: mounts copied into a less privileged namespace are locked,
   so the answer (root there) cannot remount them writable or unmount the read-only layer;
6. this process made not dumpable (no ptrace of it, no /proc/1/mem), and the program run; it refuses new
   processes itself (serve.py's seccomp filter) before any of the answer runs;
7. when the program ends, count the processes it left in the namespace: any left is exit code 122 and the
   line "left N processes running" (the kernel kills them all when this process, PID 1, exits).
Exit code 121 means the set-up failed (the caller records it, never runs the answer unconfined).
"""

import ctypes
import os
import platform
import resource
import sys

SETUP_FAILED = 121
LEFT_RUNNING = 122  # the program exited and left processes running
PID_MAX = 301  # the kernel's least pid_max
OPEN_FILES = 256  # RLIMIT_NOFILE
WORK = "/sandbox"  # the program's folder in its new root
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_NOATIME, MS_NODIRATIME, MS_BIND = 32, 1024, 2048, 4096
MS_REC, MS_RELATIME, MS_STRICTATIME = 16384, 1 << 21, 1 << 24
MNT_DETACH = 2
PR_SET_DUMPABLE = 4
PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "ppc64le": 203, "s390x": 217, "riscv64": 41}  # syscall numbers
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
SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32")
PROC_READ_ONLY = ("/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs", "/proc/scsi", "/proc/acpi")
DEVICES = ("null", "zero", "full", "random", "urandom")


def _check(result, target):
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, os.strerror(errno), target)


def _mount(libc, source, target, flags, fstype=None, data=None):
    _check(libc.mount(source, target.encode(), fstype, flags, data), target)


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


def _interpreter_dirs():
    """The interpreter's installation: its prefixes and the folder above its binary's, real paths."""
    binary = os.path.dirname(os.path.dirname(os.path.realpath(sys.executable)))
    dirs = {os.path.realpath(path) for path in (sys.base_prefix, sys.base_exec_prefix, binary)}
    return sorted(path for path in dirs if path != "/")


def _outside_system(paths):
    """The paths not already inside a system folder (/usr ...) or another path of the list."""
    system = [os.path.realpath(path) for path in SYSTEM if os.path.exists(path)]
    kept = []
    for path in sorted(paths, key=len):
        if not any(path == top or path.startswith(top.rstrip("/") + "/") for top in system + kept):
            kept.append(path)
    return kept


def _bind(libc, source, new):
    """`source` bound (recursively) at the same path under `new`; a top-level symbolic link copied as a link."""
    target = new + source
    if os.path.islink(source) and os.path.dirname(source) == "/":
        os.symlink(os.readlink(source), target)
        return
    if os.path.isdir(source):
        os.makedirs(target, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        open(target, "w").close()
    _mount(libc, source.encode(), target, MS_BIND | MS_REC)


def _fresh_dev(libc, target):
    """A tmpfs with the harmless device nodes at `target`."""
    os.mkdir(target)
    _mount(libc, b"tmpfs", target, MS_NOSUID | MS_NOEXEC, b"tmpfs", b"mode=755,size=64k")
    for name in DEVICES:
        node = os.path.join(target, name)
        open(node, "w").close()
        _mount(libc, f"/dev/{name}".encode(), node, MS_BIND)


def _work_folder(libc, target, files, disk_bytes):
    """The program's folder: a tmpfs of `disk_bytes` (its total disk use) holding the caller's files."""
    os.mkdir(target)
    options = f"mode=755,size={disk_bytes},nr_inodes={max(disk_bytes // 4096, 64)}".encode()
    _mount(libc, b"tmpfs", target, MS_NOSUID | MS_NODEV, b"tmpfs", options)
    for name, data in files.items():
        with open(os.path.join(target, name), "wb") as handle:
            handle.write(data)


def _pivot(libc, new):
    """`new` becomes the root; the old root is detached, so no path reaches the host's files."""
    number = PIVOT_ROOT.get(platform.machine())
    if number is None:
        raise OSError(f"no pivot_root system call number for {platform.machine()}")
    os.chdir(new)
    _check(libc.syscall(number, b".", b"."), "pivot_root")
    _check(libc.umount2(b".", MNT_DETACH), "old root")
    os.chdir("/")


def _read_only(libc):
    """Every mount but the work folder, /proc and devpts/mqueue remounted read-only."""
    for point, flags, fstype in list(_mounts()):
        if point in (WORK, "/proc") or fstype in LEFT_AS_IS:
            continue
        try:
            _mount(libc, None, point, MS_REMOUNT | MS_BIND | MS_RDONLY | flags)
        except OSError as exc:
            if exc.errno != 2:  # a mount point hidden under another mount (its path is gone): not reachable
                raise


def confine(folder, disk_bytes):
    """The program's new root (see the module's steps 2 and 3); the working directory is its folder."""
    libc = ctypes.CDLL(None, use_errno=True)
    files = {}
    for name in os.listdir(folder):
        with open(os.path.join(folder, name), "rb") as handle:
            files[name] = handle.read()
    for path in PROC_READ_ONLY:
        if os.path.exists(path):
            _mount(libc, path.encode(), path, MS_BIND)
    _mount(libc, b"tmpfs", folder, MS_NOSUID | MS_NODEV, b"tmpfs", b"mode=755,size=1m")
    for path in [*SYSTEM, *_outside_system(_interpreter_dirs())]:
        if os.path.lexists(path):
            _bind(libc, path, folder)
    os.mkdir(folder + "/proc")
    _mount(libc, b"/proc", folder + "/proc", MS_BIND | MS_REC)
    _fresh_dev(libc, folder + "/dev")
    _work_folder(libc, folder + WORK, files, disk_bytes)
    _pivot(libc, folder)
    _read_only(libc)
    os.chdir(WORK)


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


def _set_limits(cpu_s, memory, processes, file_bytes):
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 1))  # SIGXCPU at the soft limit
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_NPROC, (processes, processes))
    resource.setrlimit(resource.RLIMIT_FSIZE, (file_bytes, file_bytes))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    # open files: each pipe or socket buffer is kernel memory outside the address space, so few of them
    resource.setrlimit(resource.RLIMIT_NOFILE, (OPEN_FILES, OPEN_FILES))


def main():
    """Confine this namespace (pid_max, the new root, the limits), run solution.py in a nested user namespace and
    exit with its status: 128 + N when signal N killed it (the line "CPU time limit" where SIGKILL came at the
    hard CPU limit), SETUP_FAILED or LEFT_RUNNING as the module says."""
    folder, cpu_s, memory, processes, file_bytes, disk_bytes, unshare = sys.argv[1:8]
    python = os.path.realpath(sys.executable)
    try:
        _cap_pids(PID_MAX)  # before /proc/sys is read-only
        confine(folder, int(disk_bytes))
        _set_limits(int(cpu_s), int(memory), int(processes), int(file_bytes))
    except Exception as exc:  # noqa: BLE001 - any failure to confine means the answer must not run
        sys.stderr.write(f"sandbox set-up failed: {exc}\n")
        sys.exit(SETUP_FAILED)
    # PID 1 of the namespace waits for the program (PID 2): a signal that kills the program (SIGXCPU, SIGXFSZ)
    # comes back as an exit status 128 + N and a line on stderr, as a shell reports it
    # this process is not dumpable: the answer (root only in its nested namespace) cannot ptrace it or open its
    # /proc/1/mem to start processes through it, outside the answer's seccomp filter
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, ctypes.c_ulong(0), 0, 0, 0)
    child = os.spawnv(
        os.P_NOWAIT, unshare, [unshare, "--user", "--map-root-user", "--", python, "-I", "-S", "solution.py"]
    )
    status, usage = os.wait4(child, 0)[1:]
    left = _running_others()
    if left:  # the kernel kills them when this process (PID 1) exits; the answer is not correct for leaving them
        sys.stderr.write(f"left {left} process{'es' if left > 1 else ''} running\n")
        sys.exit(LEFT_RUNNING)
    if os.WIFSIGNALED(status) and os.WTERMSIG(status) == 9 and usage.ru_utime + usage.ru_stime >= int(cpu_s):
        # the kernel's SIGKILL at the hard CPU limit: a program that ignored SIGXCPU at the soft one
        sys.stderr.write("CPU time limit\n")
        sys.exit(128 + 9)
    if os.WIFSIGNALED(status):
        sys.stderr.write(f"killed by signal {os.WTERMSIG(status)}\n")
        sys.exit(128 + os.WTERMSIG(status))
    sys.exit(os.WEXITSTATUS(status))


if __name__ == "__main__":
    main()
