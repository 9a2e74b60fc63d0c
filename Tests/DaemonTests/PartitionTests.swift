import BacklineTestSupport
import BacklineWire
import Daemon
import Foundation
import Testing

/// Partitions (zones) through the daemon's protocols: mpd's commands and ACKs, `idle` and JSON
/// events that reach only the partition a client is in, `ctl --partition`, and saved state. No
/// sound is asserted here (the devices are ALSA's `null`); what the rooms hear is checked
/// through snapserver in ``SnapcastTests``.
@Suite("Partitions through MPD, JSON and ctl")
struct PartitionTests {
    static func daemon() throws -> (DaemonFixture, Int) {
        let d = try DaemonFixture(device: "null", config: DaemonFixture.foreground)
        let port = HardeningTests.port()
        try d.start(["--library", "off", "--mpd-listen", "127.0.0.1:\(port)", "--output", "kitchen=null", "--output", "bath=null"])
        return (d, port)
    }

    @Test("MPD: newpartition, partition, listpartitions, delpartition, moveoutput and outputs in mpd's words; status names the partition; a client's queue is its partition's; idle reports only its partition's player and queue")
    func mpd() throws {
        let (d, port) = try Self.daemon()
        let a = try TCPLineClient.mpd(port: port), b = try TCPLineClient.mpd(port: port)
        #expect(try a.ask("newpartition kitchen") == "OK\n")
        #expect(try a.ask("newpartition kitchen") == "ACK [56@0] {newpartition} name already exists\n")
        #expect(try a.ask("newpartition \"bad name\"") == "ACK [2@0] {newpartition} bad name\n")
        #expect(try a.ask("listpartitions") == "partition: default\npartition: kitchen\nOK\n")
        #expect(try a.ask("partition nowhere") == "ACK [50@0] {partition} partition does not exist\n")
        #expect(try a.ask("partition kitchen") == "OK\n")
        #expect(try a.ask("status").contains("\npartition: kitchen\n"))
        let outputs = try a.ask("outputs")
        #expect(outputs.contains("outputid: 1\noutputname: kitchen\nplugin: alsa\noutputenabled: 1\n"), "\(outputs)")
        #expect(outputs.contains("outputid: 0\noutputname: null\nplugin: dummy\noutputenabled: 0\n"), "the default's, a dummy here: \(outputs)")

        // Each partition's queue is its own, and so are its idle events.
        #expect(try a.ask("add album/a.mp3") == "OK\n")
        #expect(try b.ask("status").contains("\npartition: default\n"))
        #expect(try b.ask("playlistinfo") == "OK\n", "the default partition's queue is empty")
        #expect(try a.ask("playlistinfo").contains("file: album/a.mp3\n"))
        #expect(try a.ask("idle playlist") == "changed: playlist\nOK\n", "its own add, reported (and so no longer pending)")
        try a.write("idle playlist mixer")
        #expect(try b.ask("add album/b.mp3") == "OK\n")  // the default partition's queue: not the kitchen's
        let c = try TCPLineClient.mpd(port: port)
        #expect(try c.ask("partition kitchen") == "OK\n")
        #expect(try c.ask("setvol 40") == "OK\n")
        #expect(a.textLine(within: 10) == "changed: mixer", "the kitchen's change, not the default partition's queue")
        #expect(a.textLine(within: 10) == "OK")

        #expect(try a.ask("moveoutput nothing") == "ACK [50@0] {moveoutput} No such output\n")
        #expect(try b.ask("moveoutput kitchen").hasPrefix("ACK [5@0] {moveoutput} the default partition plays through the daemon's device"))
        #expect(try b.ask("newpartition bath") == "OK\n")
        #expect(try a.ask("moveoutput bath") == "OK\n")
        let moved = try a.ask("outputs")
        #expect(moved.contains("outputname: bath\nplugin: alsa\noutputenabled: 1\n") && moved.contains("outputname: kitchen\nplugin: dummy\n"),
                "\(moved)")
        #expect(try a.ask("playlistinfo").contains("file: album/a.mp3\n"), "the queue moved with the partition onto its new output")
        #expect(try b.ask("delpartition default") == "ACK [5@0] {delpartition} cannot delete the default partition\n")
        #expect(try b.ask("delpartition nowhere") == "ACK [50@0] {delpartition} no such partition\n")
        try b.write("idle partition")
        #expect(try c.ask("delpartition kitchen") == "OK\n")
        #expect(b.textLine(within: 10) == "changed: partition")
        #expect(try a.ask("status").contains("\npartition: default\n"), "a client of a deleted partition is back in the default one")
        d.expectCleanStop()
    }

    @Test("JSON and ctl: --partition runs a command in a partition; a subscriber hears its own partition's events and everyone's partition changes; partitions and their queues survive a restart")
    func jsonAndCtl() throws {
        let (d, _) = try Self.daemon()
        #expect(try d.ctl(["newpartition", "kitchen"]).stdoutText.contains("kitchen: stopped, 0 items, output kitchen"))
        let watcher = try d.client()
        _ = try watcher.request("partition", [("name", "kitchen")])
        _ = try watcher.request("subscribe", [("events", ["queue", "partitions"])])
        #expect(try d.request("add", [("paths", ["album/c.mp3"])]).ok)  // the default partition's
        let r = try d.ctl(["--partition", "kitchen", "add", "album/a.mp3", "album/b.mp3"])
        #expect(r.status == 0, "\(r.stderr)")
        let event = try #require(try watcher.nextEvent(timeout: 10))
        #expect(event["event"] == "queue" && event["count"] == 2, "the kitchen's queue, not the default's: \(event.text)")
        #expect(try d.ctl(["--partition", "nowhere", "status"]).stderr.contains("no partition \"nowhere\""))
        _ = try d.ctl(["newpartition", "bath"])
        #expect(try watcher.nextEvent(timeout: 10)?["event"] == "partitions", "a new partition is told to everyone")
        let listed = try d.ctl(["--partition", "kitchen", "list"]).stdoutText
        #expect(listed.contains("a.mp3") && !listed.contains("c.mp3"), "\(listed)")

        d.expectCleanStop()
        try d.start(["--library", "off", "--output", "kitchen=null", "--output", "bath=null"])
        let parts = try d.request("listpartitions")["partitions"]?.array ?? []
        #expect(parts.map { $0["name"]?.string ?? "" } == ["default", "kitchen", "bath"], "\(parts)")
        #expect(parts.map { $0["count"]?.int ?? -1 } == [1, 2, 0] && parts[2]["output"] == "bath")
        d.expectCleanStop()
    }
}
