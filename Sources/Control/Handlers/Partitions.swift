import Player
import BacklineSchema
// Partitions (zones): several queues in one daemon, as mpd's. Making, deleting and rebuilding a
// partition starts or stops a player's threads: off the event loop, under the command lock.

/// Makes a partition (its own queue, player state and output).
public struct NewPartitionCommand: ControlCommand {
    public static let descriptor = CommandDescriptor(Self.self, .newPartition, .partitions, executor: .offLoop)
    public var name: String
    public var output: String?
    public init(name: String, output: String? = nil) { (self.name, self.output) = (name, output) }
    public init(_ a: Arguments) throws(CommandError) {
        guard let n = a.string("name") else { throw .badArgument("newpartition: \"name\" is required") }
        (name, output) = (n, a.string("output"))
    }
    public var arguments: Arguments {
        var v: [String: ArgumentValue] = ["name": .string(name)]
        if let output { v["output"] = .string(output) }
        return Arguments(v)
    }
    public func run(_ x: CommandContext) throws(CommandError) -> Reply {
        try x.locked { () throws(CommandError) in
            if let output {
                guard let o = x.dispatcher.partitions.outputList.first(where: { $0.name == output && $0.id > 0 }) else {
                    throw .notFound("newpartition: no output \"\(output)\"")
                }
                if let owner = o.partition { throw .exists("newpartition: output \"\(output)\" plays in partition \"\(owner)\" (moveoutput moves it)") }
            }
            _ = try x.dispatcher.partitions.create(name, output: output)
        }
        return .partitions(x.dispatcher.partitions.list, current: x.connection.partition)
    }
}

/// Puts this connection in another partition: its later commands and events are that one's.
public struct PartitionCommand: ControlCommand {
    public static let descriptor = CommandDescriptor(Self.self, .partition, .partitions, wakes: false)
    public var name: String
    public init(name: String) { self.name = name }
    public init(_ a: Arguments) throws(CommandError) {
        guard let n = a.string("name") else { throw .badArgument("partition: \"name\" is required") }
        name = n
    }
    public var arguments: Arguments { Arguments(["name": .string(name)]) }
    public func run(_ x: CommandContext) throws(CommandError) -> Reply {
        guard x.dispatcher.partitions.playback(named: name) != nil else { throw .notFound("no partition \"\(name)\"") }
        x.connection.partition = name
        return .partitions(x.dispatcher.partitions.list, current: name)
    }
}

/// The partitions.
public struct ListPartitionsCommand: ControlCommand {
    public static let descriptor = CommandDescriptor(Self.self, .listPartitions, .partitions, wakes: false)
    public init() {}
    public init(_ a: Arguments) {}
    public func run(_ x: CommandContext) -> Reply { .partitions(x.dispatcher.partitions.list, current: x.connection.partition) }
}

/// Deletes a partition (not the default): it stops, its output is free again.
public struct DeletePartitionCommand: ControlCommand {
    public static let descriptor = CommandDescriptor(Self.self, .deletePartition, .partitions, executor: .offLoop)
    public var name: String
    public init(name: String) { self.name = name }
    public init(_ a: Arguments) throws(CommandError) {
        guard let n = a.string("name") else { throw .badArgument("delpartition: \"name\" is required") }
        name = n
    }
    public var arguments: Arguments { Arguments(["name": .string(name)]) }
    public func run(_ x: CommandContext) throws(CommandError) -> Reply {
        try x.locked { () throws(CommandError) in try x.dispatcher.partitions.delete(name) }
        return .partitions(x.dispatcher.partitions.list, current: x.dispatcher.playback(for: x.connection).partition)
    }
}

/// Moves an output into this connection's partition.
public struct MoveOutputCommand: ControlCommand {
    public static let descriptor = CommandDescriptor(Self.self, .moveOutput, .partitions, executor: .offLoop)
    public var name: String
    public init(name: String) { self.name = name }
    public init(_ a: Arguments) throws(CommandError) {
        guard let n = a.string("name") else { throw .badArgument("moveoutput: \"name\" is required") }
        name = n
    }
    public var arguments: Arguments { Arguments(["name": .string(name)]) }
    public func run(_ x: CommandContext) throws(CommandError) -> Reply {
        let partition = x.playback.partition
        try x.locked { () throws(CommandError) in try x.dispatcher.partitions.move(output: name, into: partition) }
        return .outputs(x.dispatcher.partitions.outputList)
    }
}

/// The outputs and the partition each plays in.
public struct OutputsCommand: ControlCommand {
    public static let descriptor = CommandDescriptor(Self.self, .outputs, .partitions, wakes: false)
    public init() {}
    public init(_ a: Arguments) {}
    public func run(_ x: CommandContext) -> Reply {
        let here = x.playback.partition, muted = x.playback.player.isMuted
        return .outputs(x.dispatcher.partitions.outputList.map { o in
            var o = o
            if o.partition == here { o.muted = muted }
            return o
        })
    }
}
