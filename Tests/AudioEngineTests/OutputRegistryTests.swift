import AudioEngine
import BacklineTestSupport
import Testing

@Suite("the output registry: device names to drivers, built-in and registered")
struct OutputRegistryTests {
    @Test("each device name finds its kind and MPD plugin name; ALSA takes any other name")
    func builtInKinds() {
        #expect(OutputRegistry.kind(for: "pulse").plugin == "pulse")
        #expect(OutputRegistry.kind(for: "pulse:backline_sink").name == "PulseAudio")
        #expect(OutputRegistry.kind(for: "pipe:/run/snapserver/fifo").plugin == "fifo")
        #expect(OutputRegistry.kind(for: "hw:0").plugin == "alsa")
        #expect(OutputRegistry.kind(for: "file:/tmp/x.raw").name == "ALSA")
        #expect(OutputRegistry.kinds.last?.name == "ALSA")
    }

    @Test("a registered driver is matched before the built-in ones, once however often it registers")
    func registered() {
        PacedDevice.registerDriver()
        PacedDevice.registerDriver()
        #expect(OutputRegistry.kind(for: "paced:x").name == "paced")
        #expect(OutputRegistry.kind(for: "paced:x").forTests)
        #expect(OutputRegistry.kinds.filter { $0.name == "paced" }.count == 1)
        #expect(OutputDeviceKind.all == OutputRegistry.kinds)
    }
}
