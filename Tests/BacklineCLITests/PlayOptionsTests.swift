import ArgumentParser
import Testing

@testable import backline_player

@Suite("play's command line: the fast path reads what swift-argument-parser reads, or leaves it to it")
struct PlayOptionsTests {
    @Test("well-formed command lines: the same options both ways",
          arguments: [
              ["a.mp3"],
              ["-"],
              ["--device", "null", "--no-keys", "a.mp3", "b.mp3"],
              ["--device=pulse:sink", "--buffer-ms", "200", "--format=s16", "dir"],
              ["--shuffle", "--repeat", "all", "--volume", "50", "--start", "1:05", "x.m3u"],
              ["--category", "ambient", "--background-grace", "2.5", "--verbose", "--notify", "--no-mpris", "a.mp3"],
              ["a.mp3", "--volume=0", "b.mp3", "--", "--not-an-option.mp3"],
              ["--device", "null", "--device", "default", "a.mp3"],
              ["--crossfade", "2.5", "--replay-gain=track", "--preamp", "3", "a.mp3"],
              ["--speed", "1.5", "--trim-silence", "spoken", "--pitch-algorithm=spectral", "--resume", "book.m4b"],
          ])
    func same(_ arguments: [String]) throws {
        let fast = try #require(PlayOptions(fastParsing: arguments[...]))
        let parsed = try Play.parse(arguments).options
        #expect(fast == parsed)
    }

    @Test("help, short options, unknown options, malformed values: nil (the parser reports them)",
          arguments: [
              ["--help"], ["-h"], ["--version"], ["--frobnicate", "a.mp3"], ["--volume", "-5", "a.mp3"],
              ["--volume", "loud", "a.mp3"], ["--buffer-ms"], ["--shuffle=yes", "a.mp3"], ["--device", "--no-keys", "a.mp3"],
              ["-x.mp3"],
          ])
    func refused(_ arguments: [String]) {
        #expect(PlayOptions(fastParsing: arguments[...]) == nil)
    }
}
