"""The platform every app uses: REST, errors, jobs, bulk writes, cache, CSV files, auth, middleware, schema,
permissions and providers."""
