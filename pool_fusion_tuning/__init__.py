"""The toolkit's one installed import name (docs/contributing.md, "One import root").

The code lives where the project was set up, at the top of the repository: `tuning/`,
`baselines/`, `reports/` and `runfolder/`. The links beside this file put them under this
package, so that a checkout, an installed wheel, mypy and the GPU machine (which runs from a
checkout) all see the same names: `pool_fusion_tuning.tuning.cli`, never a bare `tuning`.
"""
