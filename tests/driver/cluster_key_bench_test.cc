// The cluster key and the coordinator's address as drtmx-bench and
// drtmx-node use them: the launcher hands its nodes the key on their
// standard input (no command line shows it, also through a remote shell),
// binds its coordinator to the one address the run needs, and a node
// started by hand needs a private key file.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "hosts.h"
#include "support/bench_run.h"

namespace {

using drtmx::bench::testing::Outcome;
using drtmx::bench::testing::run;

std::string tmp(const std::string& name) {
  return ::testing::TempDir() + "ckb" + std::to_string(getpid()) + "_" + name;
}

std::string key_file(const std::string& name, const std::string& key, mode_t mode) {
  const std::string p = tmp(name);
  std::ofstream(p) << key << "\n";
  chmod(p.c_str(), mode);
  return p;
}

TEST(ClusterKeyLaunch, TheKeyIsOnNoCommandLineAndTheCoordinatorListensOnLoopbackOnly) {
  const std::string cluster = "ckl" + std::to_string(getpid());
  const std::string key = "drtmx-launch-test-key-" + std::to_string(getpid()) + "-0123456789abcdef";
  const std::string file = key_file("key", key, 0600);
  const std::string script = tmp("launch.sh");
  const std::string nodes = "'[-]-cluster=" + cluster + " .*[-]-node='";
  std::ofstream(script)
      << "KEY='" << key << "'\n"
      << DRTMX_BENCH_PATH << " --cluster-key-file=" << file << " --cluster=" << cluster
      << " --seconds=3 --warmup=0.2 --accounts=1000 > " << tmp("out") << " 2>&1 & b=$!\n"
      << "for i in $(seq 1 300); do [ \"$(pgrep -f -c " << nodes
      << ")\" = 3 ] && break; sleep 0.05; done\n"
      << "echo \"nodes: $(pgrep -f -c " << nodes
      << ")\"\n"
      // The processes whose command line holds the key (none may): matched
      // in bash, so that no matcher's own command line holds it.
      << "for p in /proc/[0-9]*; do c=$(tr '\\0' ' ' < $p/cmdline 2>/dev/null); "
         "case \"$c\" in *\"$KEY\"*) echo \"key on the command line of ${p#/proc/}: $c\";; "
         "esac; done\n"
      << "for p in $(pgrep -f " << nodes << "); do tr '\\0' ' ' < /proc/$p/cmdline | "
      << "grep -q -- '--cluster-key-file=- ' && echo reads-stdin; done\n"
      << "ss -ltnpH | grep \"pid=$b,\" | awk '{print \"listens \" $4}'\n"
      << "wait $b; echo \"exit=$?\"\n"
      << "cat " << tmp("out") << "\n";
  const Outcome o = run("bash", script, 120);
  std::remove(script.c_str());
  std::remove(file.c_str());
  std::remove(tmp("out").c_str());
  EXPECT_NE(o.output.find("nodes: 3"), std::string::npos) << o.output;
  EXPECT_EQ(o.output.find("key on the command line"), std::string::npos) << o.output;
  size_t stdin_nodes = 0;
  for (size_t at = o.output.find("reads-stdin"); at != std::string::npos;
       at = o.output.find("reads-stdin", at + 1)) {
    ++stdin_nodes;
  }
  EXPECT_EQ(stdin_nodes, 3u) << o.output;
  EXPECT_NE(o.output.find("listens 127.0.0.1:"), std::string::npos) << o.output;
  EXPECT_EQ(o.output.find("listens 0.0.0.0:"), std::string::npos) << o.output;
  EXPECT_EQ(o.output.find("listens *:"), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("exit=0"), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("check: ok"), std::string::npos) << o.output;
}

TEST(ClusterKeyLaunch, ThroughARemoteShellTheKeyArrivesOnStandardInput) {
  // A "remote shell" that runs the command here in the foreground, as ssh
  // would there: the node's input is the shell's. The hosts are this
  // machine, so the coordinator binds the address that reaches it.
  const std::string cluster = "ckr" + std::to_string(getpid());
  const std::string shell = tmp("rsh.sh");
  std::ofstream(shell) << "#!/bin/sh\nshift\nexec sh -c \"$*\"\n";
  chmod(shell.c_str(), 0700);
  const std::string hosts = tmp("hosts");
  std::ofstream(hosts) << "127.0.0.1\nlocalhost\n";
  const Outcome o =
      run(DRTMX_BENCH_PATH,
          "--hosts=" + hosts + " --remote-shell=" + shell + " --nodes=2 --cluster=" + cluster +
              " --seconds=0.5 --warmup=0.1 --accounts=500",
          120);
  std::remove(shell.c_str());
  std::remove(hosts.c_str());
  EXPECT_EQ(o.exit_code, 0) << o.output;
  EXPECT_NE(o.output.find("check: ok"), std::string::npos) << o.output;
}

TEST(ClusterKeyLaunch, AKeyOnStandardInputServesEveryRunOfTheLauncher) {
  // Two presets: two runs, one key read once.
  const std::string cluster = "cks" + std::to_string(getpid());
  const Outcome o =
      run("bash",
          "-c 'printf 0123456789abcdef0123456789abcdef | " + std::string(DRTMX_BENCH_PATH) +
              " --cluster-key-file=- --policy=drtmh,farm --cluster=" + cluster +
              " --seconds=0.3 --warmup=0.1 --accounts=500'",
          120);
  EXPECT_EQ(o.exit_code, 0) << o.output;
  size_t checks = 0;
  for (size_t at = o.output.find("check: ok"); at != std::string::npos;
       at = o.output.find("check: ok", at + 1)) {
    ++checks;
  }
  EXPECT_EQ(checks, 2u) << o.output;
}

TEST(ClusterKeyLaunch, ANodeByHandNeedsAPrivateKeyFileAndTheOptionsAreChecked) {
  const std::string common = "--node=1 --nodes=2 --coordinator=127.0.0.1:1 --join-timeout-ms=300";
  const Outcome none = run(DRTMX_NODE_PATH, common, 30);
  EXPECT_EQ(none.exit_code, 2) << none.output;
  EXPECT_NE(none.output.find("--node=1 needs --cluster-key-file=FILE"), std::string::npos)
      << none.output;
  const std::string open = key_file("open", std::string(64, 'o'), 0644);
  const Outcome readable = run(DRTMX_NODE_PATH, common + " --cluster-key-file=" + open, 30);
  // The launcher refuses it too, before anything starts.
  const Outcome launcher = run(DRTMX_BENCH_PATH, "--seconds=0.5 --cluster-key-file=" + open, 30);
  EXPECT_EQ(launcher.exit_code, 2) << launcher.output;
  EXPECT_NE(launcher.output.find("chmod 600"), std::string::npos) << launcher.output;
  std::remove(open.c_str());
  EXPECT_EQ(readable.exit_code, 2) << readable.output;
  EXPECT_NE(readable.output.find("mode 0644"), std::string::npos) << readable.output;
  EXPECT_NE(readable.output.find("chmod 600"), std::string::npos) << readable.output;
  const std::string shorty = key_file("short", "abc", 0600);
  const Outcome too_short = run(DRTMX_NODE_PATH, common + " --cluster-key-file=" + shorty, 30);
  std::remove(shorty.c_str());
  EXPECT_NE(too_short.output.find("fewer than 32"), std::string::npos) << too_short.output;
  const Outcome bind = run(DRTMX_NODE_PATH, common + " --coordinator-bind=127.0.0.1", 30);
  EXPECT_EQ(bind.exit_code, 2) << bind.output;
  EXPECT_NE(bind.output.find("--coordinator-bind is for the process that serves the coordinator"),
            std::string::npos)
      << bind.output;
  const Outcome port = run(DRTMX_BENCH_PATH, "--coordinator-bind=127.0.0.1:7000", 30);
  EXPECT_EQ(port.exit_code, 2) << port.output;
  EXPECT_NE(port.output.find("without a port"), std::string::npos) << port.output;
  // An address this machine does not have: the coordinator cannot listen.
  const Outcome foreign =
      run(DRTMX_BENCH_PATH, "--coordinator-bind=192.0.2.1 --seconds=0.5 --accounts=500", 30);
  EXPECT_NE(foreign.exit_code, 0) << foreign.output;
  EXPECT_NE(foreign.output.find("cannot listen on 192.0.2.1:0: Cannot assign requested address "
                                "(not an address of this machine"),
            std::string::npos)
      << foreign.output;
}

TEST(CoordinatorBindAddress, IsTheSourceAddressTowardTheHosts) {
  using drtmx::bench::HostLine;
  auto a = drtmx::bench::coordinator_bind_address(
      {HostLine{"127.0.0.1", {}, 1}, HostLine{"me@localhost", {}, 2}});
  ASSERT_TRUE(a.is_ok()) << a.status().to_string();
  EXPECT_EQ(*a, "127.0.0.1");
  auto bad = drtmx::bench::coordinator_bind_address({HostLine{"no-such-host.invalid", {}, 1}});
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("no-such-host.invalid"), std::string::npos);
  EXPECT_NE(bad.status().message().find("--coordinator-bind"), std::string::npos);
}

}  // namespace
