// drtmx-bench --hosts=FILE: the hosts a multi-host cluster runs on, one
// node per line, and how the launcher starts and stops drtmx-node there
// through a remote shell (--remote-shell, default "ssh -o BatchMode=yes").
//
// File format: one host per line, node 0 first; after the host name, options
// for that node only (e.g. "node2.lan --device=mlx5_1"). Blank lines and
// lines starting with '#' are skipped.
//
// Starting node i: /bin/sh -c 'exec <remote-shell> <host> <command>' where
// <command> is "exec <remote-exe> <the node's options>", each word quoted for
// the remote shell. Stopping: the nodes stop by themselves when the
// launcher's coordinator goes away; on any exit of the launcher (a finished
// run, a failed node, SIGINT/SIGTERM) it also kills, on every host, the
// drtmx-node processes of its cluster (pkill on the --cluster=<name> of
// their command lines; the cluster name is unique per run). Faults go the
// same way: --kill-node / --stop-node signal one node on its host
// (remote_signal), --crash-at kills every host's nodes at once (all_at_once
// of remote_stop) — killing the local remote shell would kill nothing on a
// host reached by ssh.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"

namespace drtmx::bench {

struct HostLine {
  std::string host;
  std::vector<std::string> options;  // "--key=value" words for this node
  int line = 0;                      // in the file, for messages
};

// The hosts of `path`. Errors name the file and the line: unreadable, no
// host, a host name with characters a shell or ssh would misread, an option
// that does not start with "--".
Result<std::vector<HostLine>> read_hosts(const std::string& path);

// The one local address from which this machine reaches every host of
// `hosts` (the kernel's route: the source address a UDP socket connected
// to the host gets): where drtmx-bench's coordinator listens by default
// with --hosts, so that it is reachable from the hosts and from no other
// interface. "user@host" lines count as host. Errors, each naming what to
// give instead (--coordinator-bind or --coordinator-host): a host that
// does not resolve (an ssh alias, say), none routable, or hosts reached
// from different local addresses.
Result<std::string> coordinator_bind_address(const std::vector<HostLine>& hosts);

// `s` as one word for a POSIX shell (single quotes).
std::string shell_quote(const std::string& s);

// The /bin/sh -c text that runs `exe args...` on `host` through
// `remote_shell`.
std::string remote_start(const std::string& remote_shell, const std::string& host,
                         const std::string& exe, const std::vector<std::string>& args);

// The /bin/sh -c text that kills, on `host`, every process whose command
// line holds --cluster=<cluster> (bounded by `timeout_s`).
std::string remote_stop(const std::string& remote_shell, const std::string& host,
                        const std::string& cluster, int timeout_s);

// The /bin/sh -c text that sends `signal` (a name: KILL, STOP, CONT) to
// node `node` of `cluster` on `host` (bounded by `timeout_s`); its exit
// status is 0 when a process was found.
std::string remote_signal(const std::string& remote_shell, const std::string& host,
                          const std::string& cluster, int node, const std::string& signal,
                          int timeout_s);

// The /bin/sh -c text that runs every command of `cmds` at once and waits
// for them all (a crash of every host at the same moment).
std::string all_at_once(const std::vector<std::string>& cmds);

}  // namespace drtmx::bench
