// SKELETON: replaced by the topology importer.
