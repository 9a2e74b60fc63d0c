// A queue player as an Apple developer would write it: build a queue, observe it, play it.
//
//   swift run queue-example [--device NAME] FILE…
//
// Prints every player event and the time once a second, and exits when the queue is done.
import AudioEngine
import Dispatch
import Foundation
import MediaCore
import Player

var arguments = Array(CommandLine.arguments.dropFirst())
var device = "default"
if let i = arguments.firstIndex(of: "--device"), i + 1 < arguments.count {
    device = arguments[i + 1]
    arguments.removeSubrange(i...(i + 1))
}
guard !arguments.isEmpty else {
    FileHandle.standardError.write(Data("usage: queue-example [--device NAME] FILE…\n".utf8))
    exit(1)
}

let player = QueuePlayer(items: arguments.map { PlayerItem(path: $0) },
                         configuration: EngineConfiguration(output: OutputSettings(device: device)))

player.addObserver(queue: .main) { event in
    switch event {
    case .currentItemChanged(let item?):
        print("now playing: \(item.displayName)", item.duration.map { String(format: "(%.2f s)", $0) } ?? "")
    case .currentItemChanged(nil):
        print("queue finished")
        exit(0)
    case .itemDidPlayToEnd(let item):
        print("finished: \(item.displayName)")
    case .itemFailedToPlayToEnd(let item, let error):
        print("failed: \(item.path): \(error.reason)")
    case .timeControlStatusChanged(let status, let reason):
        print("status: \(status)", reason.map { "(\($0))" } ?? "")
    default:
        break
    }
}
let ticks = player.addPeriodicTimeObserver(forInterval: 1, queue: .main) { time in
    print(String(format: "  %6.2f s", time))
}
player.play()
dispatchMain()
