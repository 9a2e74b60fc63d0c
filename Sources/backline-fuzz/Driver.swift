import FuzzTargets
import Glibc

// `backline-fuzz`: the fuzz targets (``FuzzTargets``) as a program.
//
// Built by `scripts/fuzz` with `-sanitize=fuzzer,address` and `-DBACKLINE_LIBFUZZER`, it is
// libFuzzer's driver: the target named by `BACKLINE_FUZZ_TARGET`, libFuzzer's own options and
// corpus directories on the command line. Built normally, it replays inputs:
// `backline-fuzz TARGET FILE|DIRECTORY…` runs each through the target and says which fail.

/// The target for this run, from `BACKLINE_FUZZ_TARGET`.
nonisolated(unsafe) private var selected: FuzzTarget?

/// `line` on standard error.
private func say(_ line: String) {
    let text = line + "\n"
    _ = text.withCString { write(2, $0, strlen($0)) }
}

private func chosen() -> FuzzTarget {
    if let t = selected { return t }
    let name = getenv("BACKLINE_FUZZ_TARGET").map { String(cString: $0) } ?? ""
    guard let t = FuzzTargets.named(name) else {
        say("backline-fuzz: set BACKLINE_FUZZ_TARGET to one of: \(FuzzTargets.all.map(\.name).joined(separator: ", "))")
        exit(2)
    }
    selected = t
    t.prepare()
    return t
}

#if BACKLINE_LIBFUZZER
@_silgen_name("LLVMFuzzerRunDriver")
private func runDriver(_ argc: UnsafeMutablePointer<CInt>,
                       _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
                       _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt) -> CInt

@_cdecl("LLVMFuzzerTestOneInput")
func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    do throws(InvariantFailure) {
        try chosen().run(input)
    } catch {
        say("backline-fuzz: invariant broken: \(error)")
        abort()
    }
    return 0
}

/// The program's entry (SwiftPM links `main` to it): libFuzzer's driver.
@_cdecl("backline_fuzz_main")
func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    _ = chosen()
    var c = argc
    var v = argv
    return runDriver(&c, &v, testOneInput)
}
#else
@main
struct Replay {
    static func main() {
        let args = Array(CommandLine.arguments.dropFirst())
        if args.first == "--list" || args.isEmpty {
            for t in FuzzTargets.all { print("\(t.name)\t\(t.summary)") }
            exit(args.isEmpty ? 2 : 0)
        }
        guard let target = FuzzTargets.named(args[0]) else {
            say("backline-fuzz: no target \(args[0]) (--list names them)")
            exit(2)
        }
        var failed = 0, ran = 0
        for path in args.dropFirst() {
            for file in files(path) {
                ran += 1
                do throws(InvariantFailure) {
                    try target.run(read(file))
                } catch {
                    failed += 1
                    print("\(file): \(error.message)")
                }
            }
        }
        FuzzScratch.remove()
        print("\(target.name): \(ran) inputs, \(failed) failed")
        exit(failed == 0 ? 0 : 1)
    }

    /// `path`, or the files in it.
    static func files(_ path: String) -> [String] {
        guard let d = opendir(path) else { return [path] }
        defer { closedir(d) }
        var out: [String] = []
        while let e = readdir(d) {
            let name = withUnsafeBytes(of: e.pointee.d_name) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
            if !name.hasPrefix(".") { out.append(path + "/" + name) }
        }
        return out.sorted()
    }

    static func read(_ path: String) -> [UInt8] {
        guard let f = fopen(path, "rb") else { return [] }
        defer { fclose(f) }
        var out: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 65536)
        while case let n = fread(&buf, 1, buf.count, f), n > 0 { out += buf[0..<n] }
        return out
    }
}
#endif
