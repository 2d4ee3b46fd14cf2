import PackagePlugin

@main struct SwiftyServiceGenerate: CommandPlugin {
    func performCommand(context: PluginContext, arguments: [String]) async throws {}
}
