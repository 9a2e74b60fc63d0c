import CSystemd
import Glibc
import Synchronization
import Locking

/// A failed sd-bus call: the C function, its (negative errno) code and message.
public struct DBusError: Error, Sendable, CustomStringConvertible {
    public let function: String
    public let code: Int32
    public let message: String

    init(_ function: String, _ code: Int32) {
        self.function = function
        self.code = code
        message = String(cString: strerror(-code))
    }

    public var description: String { "\(function): \(message) (\(code))" }
}

/// A D-Bus value to send, with its signature.
public indirect enum DBusValue: Sendable, Equatable {
    case string(String)
    case objectPath(String)
    case bool(Bool)
    case int32(Int32)
    case uint32(UInt32)
    case int64(Int64)
    case uint64(UInt64)
    case double(Double)
    /// `as`.
    case strings([String])
    /// `a{sv}`: a dictionary of variants (MPRIS metadata, changed properties).
    case dictionary([(String, DBusValue)])
    /// `v`.
    case variant(DBusValue)
    /// An array of any other type, with its element signature (`ao`, `aa{sv}`).
    case array(element: String, [DBusValue])

    /// Its D-Bus signature.
    public var signature: String {
        switch self {
        case .string: "s"
        case .objectPath: "o"
        case .bool: "b"
        case .int32: "i"
        case .uint32: "u"
        case .int64: "x"
        case .uint64: "t"
        case .double: "d"
        case .strings: "as"
        case .dictionary: "a{sv}"
        case .variant: "v"
        case .array(let element, _): "a" + element
        }
    }

    public static func == (a: DBusValue, b: DBusValue) -> Bool {
        switch (a, b) {
        case (.string(let x), .string(let y)), (.objectPath(let x), .objectPath(let y)): x == y
        case (.bool(let x), .bool(let y)): x == y
        case (.int32(let x), .int32(let y)): x == y
        case (.uint32(let x), .uint32(let y)): x == y
        case (.int64(let x), .int64(let y)): x == y
        case (.uint64(let x), .uint64(let y)): x == y
        case (.double(let x), .double(let y)): x == y
        case (.strings(let x), .strings(let y)): x == y
        case (.variant(let x), .variant(let y)): x == y
        case (.array(let e, let x), .array(let f, let y)): e == f && x == y
        case (.dictionary(let x), .dictionary(let y)): x.count == y.count && zip(x, y).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        default: false
        }
    }
}

/// A message received or being built. Valid only inside the callback that hands it out, on
/// the connection's thread (sd-bus messages are not thread-safe).
public struct DBusMessage: ~Copyable {
    let raw: OpaquePointer

    public var interface: String? { sd_bus_message_get_interface(raw).map { String(cString: $0) } }
    public var member: String? { sd_bus_message_get_member(raw).map { String(cString: $0) } }
    public var path: String? { sd_bus_message_get_path(raw).map { String(cString: $0) } }
    /// The body's signature ("" when empty).
    public var signature: String { sd_bus_message_get_signature(raw, 1).map { String(cString: $0) } ?? "" }

    /// Reads the next argument, which must be of a basic type (`s`, `o`, `b`, `i`, `u`, `x`, `t`, `d`), or,
    /// for a variant, the value inside it.
    public func read() throws(DBusError) -> DBusValue {
        var type: CChar = 0
        var contents: UnsafePointer<CChar>?
        let r = sd_bus_message_peek_type(raw, &type, &contents)
        guard r > 0 else { throw DBusError("sd_bus_message_peek_type", r < 0 ? r : -EINVAL) }
        /// A fixed-size basic value (a D-Bus boolean is 4 bytes).
        func basic<T: BitwiseCopyable>(_ zero: T) throws(DBusError) -> T {
            var v = zero
            let r = withUnsafeMutableBytes(of: &v) { sd_bus_message_read_basic(raw, type, $0.baseAddress) }
            try check("sd_bus_message_read_basic", r)
            return v
        }
        /// The one value of a container (`v`), or its elements (`a` of basic values: `as`, `ao`).
        func inside<R>(_ body: () throws(DBusError) -> R) throws(DBusError) -> R {
            guard let contents else { throw DBusError("sd_bus_message_peek_type", -EINVAL) }
            try check("sd_bus_message_enter_container", sd_bus_message_enter_container(raw, type, contents))
            let r = try body()
            try check("sd_bus_message_exit_container", sd_bus_message_exit_container(raw))
            return r
        }
        switch UInt8(bitPattern: type) {
        case UInt8(ascii: "a"):
            let element = contents.map { String(cString: $0) } ?? ""
            let items = try inside { () throws(DBusError) -> [DBusValue] in
                var items: [DBusValue] = []
                while sd_bus_message_at_end(raw, 0) == 0 { items.append(try read()) }
                return items
            }
            return .array(element: element, items)
        case UInt8(ascii: "v"):
            return try inside { () throws(DBusError) in try read() }
        case UInt8(ascii: "s"), UInt8(ascii: "o"):
            let s = try basic(UnsafePointer<CChar>?.none).map { String(cString: $0) } ?? ""
            return type == CChar(UInt8(ascii: "s")) ? .string(s) : .objectPath(s)
        case UInt8(ascii: "b"): return .bool(try basic(Int32(0)) != 0)
        case UInt8(ascii: "i"): return .int32(try basic(Int32(0)))
        case UInt8(ascii: "u"): return .uint32(try basic(UInt32(0)))
        case UInt8(ascii: "x"): return .int64(try basic(Int64(0)))
        case UInt8(ascii: "t"): return .uint64(try basic(UInt64(0)))
        case UInt8(ascii: "d"): return .double(try basic(Double(0)))
        default:
            throw DBusError("sd_bus_message_read_basic", -EINVAL)
        }
    }

    /// Appends `value`.
    public func append(_ value: DBusValue) throws(DBusError) {
        func basic(_ t: UInt8, _ p: UnsafeRawPointer) throws(DBusError) {
            try check("sd_bus_message_append_basic", sd_bus_message_append_basic(raw, CChar(bitPattern: t), p))
        }
        func container(_ t: UInt8, _ contents: String, _ body: () throws(DBusError) -> Void) throws(DBusError) {
            let r = contents.withCString { sd_bus_message_open_container(raw, CChar(bitPattern: t), $0) }
            try check("sd_bus_message_open_container", r)
            try body()
            try check("sd_bus_message_close_container", sd_bus_message_close_container(raw))
        }
        func string(_ t: UInt8, _ s: String) throws(DBusError) {
            let r = s.withCString { sd_bus_message_append_basic(raw, CChar(bitPattern: t), $0) }
            try check("sd_bus_message_append_basic", r)
        }
        switch value {
        case .string(let s): try string(UInt8(ascii: "s"), s)
        case .objectPath(let s): try string(UInt8(ascii: "o"), s)
        case .bool(let b):
            var v: Int32 = b ? 1 : 0
            try basic(UInt8(ascii: "b"), &v)
        case .int32(var v): try basic(UInt8(ascii: "i"), &v)
        case .uint32(var v): try basic(UInt8(ascii: "u"), &v)
        case .int64(var v): try basic(UInt8(ascii: "x"), &v)
        case .uint64(var v): try basic(UInt8(ascii: "t"), &v)
        case .double(var v): try basic(UInt8(ascii: "d"), &v)
        case .strings(let all):
            try container(UInt8(ascii: "a"), "s") { () throws(DBusError) in
                for s in all { try string(UInt8(ascii: "s"), s) }
            }
        case .dictionary(let entries):
            try container(UInt8(ascii: "a"), "{sv}") { () throws(DBusError) in
                for (k, v) in entries {
                    try container(UInt8(ascii: "e"), "sv") { () throws(DBusError) in
                        try string(UInt8(ascii: "s"), k)
                        try append(.variant(v))
                    }
                }
            }
        case .variant(let inner):
            try container(UInt8(ascii: "v"), inner.signature) { () throws(DBusError) in try append(inner) }
        case .array(let element, let items):
            try container(UInt8(ascii: "a"), element) { () throws(DBusError) in
                for v in items { try append(v) }
            }
        }
    }
}

@inline(__always)
func check(_ function: String, _ r: Int32) throws(DBusError) {
    if r < 0 { throw DBusError(function, r) }
}

/// What an object handler answers to a method call.
public enum DBusReply: Sendable {
    /// A method return with these values (none: an empty return).
    case values([DBusValue])
    /// A D-Bus error (`org.freedesktop.DBus.Error.InvalidArgs`, …) with a message.
    case error(name: String, message: String)
    /// Not this handler's: sd-bus answers `UnknownMethod`.
    case unhandled
}

/// A connection to a message bus, with its own thread: every sd-bus call happens there (sd-bus
/// objects are not thread-safe); other threads hand it work with ``perform(_:)``. Object
/// handlers run on it too and must be quick.
public final class DBusConnection: @unchecked Sendable {
    // @unchecked: `bus` and `objects` are touched only on the connection's thread (after
    // `init` returns); `jobs` and `running` are locked or atomic.
    private let bus: OpaquePointer
    private let wake: Int32
    private let jobs = Lock<[@Sendable (DBusConnection) -> Void]>([])
    private let running = Atomic<Bool>(true)
    private var objects: [Unmanaged<ObjectBox>] = []
    private var thread: pthread_t?
    /// Set when the thread has ended.
    private let finished = Lock<Bool>(false)

    /// Connects to the user's session bus (`DBUS_SESSION_BUS_ADDRESS`, else
    /// `$XDG_RUNTIME_DIR/bus`). Throws when there is none.
    public static func session() throws(DBusError) -> DBusConnection {
        var b: OpaquePointer?
        try check("sd_bus_open_user", sd_bus_open_user(&b))
        guard let b else { throw DBusError("sd_bus_open_user", -ENOENT) }
        return try DBusConnection(bus: b)
    }

    /// Connects to the bus at `address` (`unix:path=…`).
    public static func connect(address: String) throws(DBusError) -> DBusConnection {
        var b: OpaquePointer?
        try check("sd_bus_new", sd_bus_new(&b))
        guard let b else { throw DBusError("sd_bus_new", -ENOMEM) }
        do throws(DBusError) {
            try check("sd_bus_set_address", address.withCString { sd_bus_set_address(b, $0) })
            try check("sd_bus_set_bus_client", sd_bus_set_bus_client(b, 1))
            try check("sd_bus_start", sd_bus_start(b))
        } catch {
            sd_bus_unref(b)
            throw error
        }
        return try DBusConnection(bus: b)
    }

    private init(bus: OpaquePointer) throws(DBusError) {
        self.bus = bus
        wake = eventfd(0, Int32(EFD_CLOEXEC | EFD_NONBLOCK))
        guard wake >= 0 else {
            sd_bus_unref(bus)
            throw DBusError("eventfd", -errno)
        }
        let box = Unmanaged.passRetained(self).toOpaque()
        var t = pthread_t()
        let r = pthread_create(&t, nil, { arg in
            let c = Unmanaged<DBusConnection>.fromOpaque(arg!).takeRetainedValue()
            let comm = open("/proc/thread-self/comm", O_WRONLY)  // the thread's name: bl-dbus
            if comm >= 0 { _ = write(comm, "bl-dbus", 7); Glibc.close(comm) }
            c.loop()
            return nil
        }, box)
        guard r == 0 else {
            Unmanaged<DBusConnection>.fromOpaque(box).release()
            Glibc.close(wake)
            sd_bus_unref(bus)
            throw DBusError("pthread_create", -r)
        }
        thread = t
    }

    /// Runs `job` on the connection's thread, soon. False (and `job` never runs) once the
    /// connection is closed or lost.
    @discardableResult
    public func perform(_ job: @escaping @Sendable (DBusConnection) -> Void) -> Bool {
        let queued = jobs.withLock { j -> Bool in
            guard running.load(ordering: .acquiring) else { return false }
            j.append(job)
            return true
        }
        guard queued else { return false }
        var one: UInt64 = 1
        _ = write(wake, &one, 8)
        return true
    }

    deinit { Glibc.close(wake) }  // (only now: a late perform never writes to a reused descriptor)

    /// Stops the thread and closes the connection (the names it owns go with it). Waits for
    /// the thread unless called on it.
    public func close() {
        guard running.exchange(false, ordering: .acquiringAndReleasing) else { return }
        var one: UInt64 = 1
        _ = write(wake, &one, 8)
        if let t = thread, pthread_equal(t, pthread_self()) == 0 { pthread_join(t, nil) }
    }

    // MARK: On the connection's thread

    /// Requests the well-known `name` (fails when another connection owns it).
    public func requestName(_ name: String) throws(DBusError) {
        try check("sd_bus_request_name", name.withCString { sd_bus_request_name(bus, $0, 0) })
    }

    /// Handles every method call to `path` (and below it when `fallback`) with `handler`.
    public func addObject(path: String, fallback: Bool = false,
                          _ handler: @escaping (borrowing DBusMessage) -> DBusReply) throws(DBusError) {
        let box = Unmanaged.passRetained(ObjectBox(handler))
        let callback: sd_bus_message_handler_t = { m, userdata, _ in
            guard let m, let userdata else { return 0 }
            let box = Unmanaged<ObjectBox>.fromOpaque(userdata).takeUnretainedValue()
            let message = DBusMessage(raw: m)
            guard isMethodCall(m) else { return 0 }
            switch box.handler(message) {
            case .unhandled:
                return 0
            case .values(let values):
                var reply: OpaquePointer?
                guard sd_bus_message_new_method_return(m, &reply) >= 0, let reply else { return -ENOMEM }
                defer { sd_bus_message_unref(reply) }
                let out = DBusMessage(raw: reply)
                do throws(DBusError) {
                    for v in values { try out.append(v) }
                } catch {
                    return error.code
                }
                return sd_bus_send(nil, reply, nil) < 0 ? -EIO : 1
            case .error(let name, let text):
                return name.withCString { n in
                    text.withCString { t in
                        var e = sd_bus_error(name: n, message: t, _need_free: 0)
                        return sd_bus_reply_method_error(m, &e)
                    }
                } < 0 ? -EIO : 1
            }
        }
        let r = path.withCString { p in
            fallback ? sd_bus_add_fallback(bus, nil, p, callback, box.toOpaque())
                : sd_bus_add_object(bus, nil, p, callback, box.toOpaque())
        }
        guard r >= 0 else {
            box.release()
            throw DBusError(fallback ? "sd_bus_add_fallback" : "sd_bus_add_object", r)
        }
        objects.append(box)
    }

    /// Emits the signal `interface.member` from `path` with `values`.
    public func emit(path: String, interface: String, member: String, _ values: [DBusValue]) throws(DBusError) {
        var m: OpaquePointer?
        let r = path.withCString { p in
            interface.withCString { i in member.withCString { sd_bus_message_new_signal(bus, &m, p, i, $0) } }
        }
        try check("sd_bus_message_new_signal", r)
        guard let m else { throw DBusError("sd_bus_message_new_signal", -ENOMEM) }
        defer { sd_bus_message_unref(m) }
        let message = DBusMessage(raw: m)
        for v in values { try message.append(v) }
        try check("sd_bus_send", sd_bus_send(bus, m, nil))
    }

    /// Calls `destination`'s `interface.method` at `path` with `values`; the reply's values.
    /// Blocks the connection's thread until the answer (or `timeout` seconds).
    public func call(destination: String, path: String, interface: String, method: String,
                     _ values: [DBusValue], timeout: Double = 5) throws(DBusError) -> [DBusValue] {
        var m: OpaquePointer?
        let r = destination.withCString { d in
            path.withCString { p in interface.withCString { i in method.withCString { sd_bus_message_new_method_call(bus, &m, d, p, i, $0) } } }
        }
        try check("sd_bus_message_new_method_call", r)
        guard let m else { throw DBusError("sd_bus_message_new_method_call", -ENOMEM) }
        defer { sd_bus_message_unref(m) }
        let message = DBusMessage(raw: m)
        for v in values { try message.append(v) }
        var error = sd_bus_error(name: nil, message: nil, _need_free: 0)
        defer { sd_bus_error_free(&error) }
        var reply: OpaquePointer?
        let c = sd_bus_call(bus, m, UInt64(timeout * 1e6), &error, &reply)
        guard c >= 0, let reply else {
            let text = error.message.map { String(cString: $0) } ?? String(cString: strerror(-c))
            throw DBusError(function: "sd_bus_call \(interface).\(method)", code: c, message: text)
        }
        defer { sd_bus_message_unref(reply) }
        let answer = DBusMessage(raw: reply)
        var out: [DBusValue] = []
        while let v = try? answer.read() { out.append(v) }
        return out
    }

    private func loop() {
        while running.load(ordering: .acquiring) {
            // Everything pending: incoming messages, then the jobs handed over.
            while sd_bus_process(bus, nil) > 0 {}
            for job in jobs.withLock({ j -> [@Sendable (DBusConnection) -> Void] in defer { j = [] }; return j }) { job(self) }
            while sd_bus_process(bus, nil) > 0 {}
            let fd = sd_bus_get_fd(bus)
            guard fd >= 0 else { break }
            var fds = [pollfd(fd: fd, events: Int16(truncatingIfNeeded: sd_bus_get_events(bus)), revents: 0),
                       pollfd(fd: wake, events: Int16(POLLIN), revents: 0)]
            var until: UInt64 = 0
            var timeout: Int32 = -1
            if sd_bus_get_timeout(bus, &until) > 0, until != UInt64.max {
                var now = timespec()
                clock_gettime(CLOCK_MONOTONIC, &now)
                let nowUs = UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1000
                timeout = until <= nowUs ? 0 : Int32(min((until - nowUs + 999) / 1000, UInt64(Int32.max)))
            }
            _ = poll(&fds, 2, timeout)
            if fds[1].revents != 0 {
                var v: UInt64 = 0
                _ = read(wake, &v, 8)
            }
        }
        // Closed, or the bus went away: no job is taken any more; those left are dropped.
        jobs.withLock { j in
            running.store(false, ordering: .releasing)
            j = []
        }
        sd_bus_flush(bus)
        sd_bus_close(bus)
        sd_bus_unref(bus)
        for o in objects { o.release() }
        objects = []
        finished.withLock { $0 = true }
    }
}

extension DBusError {
    public init(function: String, code: Int32, message: String) {
        self.function = function
        self.code = code
        self.message = message
    }
}

private func isMethodCall(_ m: OpaquePointer) -> Bool {
    var type: UInt8 = 0
    return sd_bus_message_get_type(m, &type) >= 0 && type == 1  // SD_BUS_MESSAGE_METHOD_CALL
}

/// An object handler, kept alive while registered.
private final class ObjectBox {
    let handler: (borrowing DBusMessage) -> DBusReply
    init(_ handler: @escaping (borrowing DBusMessage) -> DBusReply) { self.handler = handler }
}
