@testable import Player
import Testing

@Suite("Periodic observer schedule")
struct ObserverClockTests {
    @Test("the next multiple after a fire: a tick in the last millisecond before a multiple counts as that multiple, never fires it twice")
    func nextMultiple() {
        // A tick fires from 1 ms before a multiple (`next - 0.001`): at 1.4995 it fired for 1.5,
        // so the next one is 2.0 (it was 1.5 again, and 1.502 fired a second time).
        #expect(ObserverClock.nextMultiple(after: 1.4995, 0.5) == 2.0)
        #expect(ObserverClock.nextMultiple(after: 1.5, 0.5) == 2.0)
        #expect(ObserverClock.nextMultiple(after: 1.502, 0.5) == 2.0)
        #expect(ObserverClock.nextMultiple(after: 1.2, 0.5) == 1.5)
        #expect(ObserverClock.nextMultiple(after: 0, 0.25) == 0.25)
        #expect(abs(ObserverClock.nextMultiple(after: 0.0995, 0.1) - 0.2) < 1e-12)
    }
}
