"""The files and command line of one node's processes: its configs rendered into its folder, and the `java`
command line each role runs. Shared by the cluster (`testbed.kafka.cluster`) and `harness compose`.

Must never: start a process or touch a host; it only writes into the node's folder.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from testbed.addressing import AddressPlan, Host
from testbed.dist.classdata import MAIN_CLASS
from testbed.kafka import config as kcfg
from testbed.runfolder import NodeFolder
from testbed.runtime.base import Software

if TYPE_CHECKING:
    from testbed.kafka.cluster import NodeRole

# C2, HotSpot's optimising compiler, only for code that stays hot: its thresholds at ten times the defaults
# (5000 / 600 / 15000 / 40000). A node's start runs thousands of methods a few thousand times each, and
# compiling them with C2 took a third of a broker's start-up CPU (0.6 of 1.9 CPU-s, 2 cores) in a bring-up
# that is CPU-bound; code a story keeps busy reaches C2 all the same, seconds later. Nothing Kafka or
# ZooKeeper does changes. Measured in BENCHMARKS.md ("C2 for code that stays hot").
JIT_FLAGS = ("-XX:Tier4InvocationThreshold=50000", "-XX:Tier4MinInvocationThreshold=6000",
             "-XX:Tier4CompileThreshold=150000", "-XX:Tier4BackEdgeThreshold=400000")


def render_node_configs(plan: AddressPlan, settings: kcfg.ClusterSettings, node: Host, f: NodeFolder,
                        on_host: Callable[[Path], str]) -> None:
    """Write `node`'s configs (and ZooKeeper's myid) into its folder `f`; `on_host` names a path as the host sees it."""
    roles = settings.roles
    for d in (f.config_dir, *(f.data(r) for r in roles), *(f.logs(r) for r in roles)):
        d.mkdir(parents=True, exist_ok=True)
    if "zookeeper" in roles:
        (f.data("zookeeper") / "myid").write_text(f"{node.index}\n")
        f.config("zookeeper").write_text(kcfg.zoo_cfg(plan, node, on_host(f.data("zookeeper")),
                                                      settings.zookeeper_force_sync, settings.kafka_version))
    if "controller" in roles:
        f.config("controller").write_text(kcfg.controller_properties(plan, node, settings,
                                                                     on_host(f.data("controller"))))
    f.config("broker").write_text(kcfg.server_properties(plan, node, settings, on_host(f.data("broker"))))
    for role in roles:
        f.log4j(role).write_text(kcfg.log4j_properties(on_host(f.logs(role))))


def java_argv(settings: kcfg.ClusterSettings, node: Host, role: NodeRole, f: NodeFolder, sw: Software,
              on_host: Callable[[Path], str]) -> list[str]:
    """The command line of `node`'s `role` process (configs as `render_node_configs` wrote them into `f`)."""
    heap = settings.broker_heap_mb if role == "broker" else settings.zookeeper_heap_mb
    jvm = "broker" if role == "controller" else role  # a KRaft controller is the broker's JVM (kafka.Kafka)
    return [sw.java, f"-Xms{heap}m", f"-Xmx{heap}m", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
            "-XX:+ExitOnOutOfMemoryError", "-Djava.awt.headless=true", "-Xss512k", *JIT_FLAGS,
            *sw.jvm_flags.get(jvm, ()),
            f"-Dlog4j.configuration=file:{on_host(f.log4j(role))}",
            f"-Dkafka.logs.dir={on_host(f.logs(role))}", f"-Dfaultline.node={node.name}",
            "-cp", sw.kafka_classpath, MAIN_CLASS[jvm], on_host(f.config(role))]
