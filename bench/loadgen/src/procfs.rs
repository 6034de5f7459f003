//! What the kernel says about a process: CPU time (`/proc/<pid>/stat` utime + stime),
//! resident memory (`/proc/<pid>/status` VmRSS), and the machine's load average.

use std::time::Duration;

/// Clock ticks per second of `utime`/`stime` (`getconf CLK_TCK`; 100 on Linux builds
/// without an answer).
pub fn clock_ticks() -> u64 {
    std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse().ok())
        .filter(|&t| t > 0)
        .unwrap_or(100)
}

/// utime + stime of `pid` (every thread, live or ended), in clock ticks.
pub fn cpu_ticks(pid: u32) -> anyhow::Result<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    cpu_ticks_of(&text).ok_or_else(|| anyhow::anyhow!("cannot parse /proc/{pid}/stat"))
}

fn cpu_ticks_of(stat: &str) -> Option<u64> {
    // The command name may hold spaces and parentheses: fields are counted after the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After the name: state is field 3, utime field 14, stime field 15 (1-based in proc(5)).
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(utime + stime)
}

/// The command name of `pid` (`/proc/<pid>/comm`).
fn comm(pid: u32) -> Option<String> {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .ok()
        .map(|s| s.trim().to_owned())
}

/// Every live process whose command name is `name`, with its CPU ticks.
pub fn ticks_by_name(name: &str) -> Vec<(u32, u64)> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| comm(pid).as_deref() == Some(name))
        .filter_map(|pid| Some((pid, cpu_ticks(pid).ok()?)))
        .collect()
}

/// Context switches (voluntary + involuntary) of every live thread of `pid`.
pub fn context_switches(pid: u32) -> u64 {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0;
    };
    dir.filter_map(|e| std::fs::read_to_string(e.ok()?.path().join("status")).ok())
        .map(|s| {
            s.lines()
                .filter_map(|l| {
                    l.strip_prefix("voluntary_ctxt_switches:")
                        .or_else(|| l.strip_prefix("nonvoluntary_ctxt_switches:"))
                })
                .filter_map(|v| v.trim().parse::<u64>().ok())
                .sum::<u64>()
        })
        .sum()
}

/// (read, write) system calls of `pid` so far (`/proc/<pid>/io` syscr, syscw).
pub fn syscalls(pid: u32) -> (u64, u64) {
    let text = std::fs::read_to_string(format!("/proc/{pid}/io")).unwrap_or_default();
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap_or(0)
    };
    (field("syscr:"), field("syscw:"))
}

/// Resident set size of `pid` in bytes.
pub fn rss_bytes(pid: u32) -> anyhow::Result<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let kb = text
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
        .ok_or_else(|| anyhow::anyhow!("no VmRSS for {pid}"))?;
    Ok(kb * 1024)
}

/// The first three fields of `/proc/loadavg`.
pub fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

/// The machine's CPU time so far, in ticks: (stolen, all). "Stolen" is time the hypervisor
/// gave this VM's virtual CPUs to someone else (`steal` of `/proc/stat`'s `cpu` line): a
/// window with much of it measured the neighbours, not the servers. `None` off Linux.
pub fn steal_ticks() -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let fields: Vec<u64> = stat
        .lines()
        .next()?
        .strip_prefix("cpu ")?
        .split_whitespace()
        .map(|f| f.parse().ok())
        .collect::<Option<_>>()?;
    // user nice system idle iowait irq softirq steal (guest time is inside user).
    let all = fields.iter().take(8).sum();
    Some((*fields.get(7)?, all))
}

/// The CPU this process may run on (`Cpus_allowed_list` of `/proc/self/status`).
pub fn own_cpus() -> String {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
                .map(|v| v.trim().to_owned())
        })
        .unwrap_or_default()
}

/// The CPUs `pid` may run on.
pub fn cpus_of(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
                .map(|v| v.trim().to_owned())
        })
        .unwrap_or_default()
}

/// CPU time of a set of processes between two samples.
pub struct CpuSample {
    pids: Vec<(u32, u64)>,
    /// Processes found by name at the first sample; only those still there at the second
    /// count (a process that ended in between takes its ticks with it).
    named: Vec<(u32, u64)>,
    own: u64,
    /// Context switches of the servers' live threads.
    pub switches: u64,
    /// The servers' read and write system calls.
    pub syscr: u64,
    pub syscw: u64,
}

impl CpuSample {
    pub fn take(pids: &[u32], name: Option<&str>) -> anyhow::Result<Self> {
        let pids = pids
            .iter()
            .map(|&p| Ok((p, cpu_ticks(p)?)))
            .collect::<anyhow::Result<Vec<_>>>()?;
        let named = name.map(ticks_by_name).unwrap_or_default();
        let switches = pids.iter().map(|(p, _)| context_switches(*p)).sum();
        let (syscr, syscw) = pids
            .iter()
            .map(|(p, _)| syscalls(*p))
            .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
        Ok(CpuSample {
            pids,
            named,
            own: cpu_ticks(std::process::id())?,
            switches,
            syscr,
            syscw,
        })
    }

    /// (servers, named processes, this process) CPU between `self` and `later`.
    pub fn delta(&self, later: &CpuSample, tick: Duration) -> (Duration, Duration, Duration) {
        let sum = |a: &[(u32, u64)], b: &[(u32, u64)]| -> u64 {
            a.iter()
                .filter_map(|(pid, t0)| {
                    let t1 = b.iter().find(|(p, _)| p == pid)?.1;
                    Some(t1.saturating_sub(*t0))
                })
                .sum()
        };
        let servers = sum(&self.pids, &later.pids);
        let named = sum(&self.named, &later.named);
        let own = later.own.saturating_sub(self.own);
        (
            tick * u32::try_from(servers).unwrap_or(u32::MAX),
            tick * u32::try_from(named).unwrap_or(u32::MAX),
            tick * u32::try_from(own).unwrap_or(u32::MAX),
        )
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn stat_with_a_strange_name() {
        let line = "1234 (a) b (c)) S 1 2 3 4 5 6 7 8 9 10 111 222 0 0 20 0 1";
        assert_eq!(super::cpu_ticks_of(line), Some(333));
    }
}
