"""ament_python / pip package: shared helpers of the tensegrity ROS 2 nodes."""
from setuptools import find_packages, setup

PACKAGE = "tensegrity_ros_common"

setup(
    name=PACKAGE,
    version="0.1.0",
    packages=find_packages(exclude=["test"]),
    data_files=[
        ("share/ament_index/resource_index/packages", [f"resource/{PACKAGE}"]),
        (f"share/{PACKAGE}", ["package.xml"]),
    ],
    python_requires=">=3.10",
    install_requires=["numpy>=1.24", "scipy>=1.10", "mcap-ros2-support>=0.5", "tensegrity_engine"],
    zip_safe=False,
    maintainer="tensegrity-ros maintainers",
    maintainer_email="maintainers@tensegrity-ros.invalid",
    description="Topic names, QoS, model description and message conversions for the tensegrity nodes",
    license="Apache-2.0",
    extras_require={"test": ["pytest"]},      # colcon test finds pytest here (tests_require is gone in setuptools 72+)
)
